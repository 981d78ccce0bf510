package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/schema"
)

func testFactory() (*Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	f := &Factory{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(string) string { return "" },
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
	return f, &out, &errb
}

// parse runs argv through a command built with a runF that captures its options.
func parse[O any](t *testing.T, build func(*Factory, func(context.Context, *O) error) *cobra.Command, argv []string) (*O, error) {
	t.Helper()
	f, _, _ := testFactory()
	var got *O
	cmd := build(f, func(_ context.Context, o *O) error { got = o; return nil })
	markArgs(cmd)
	cmd.SetArgs(argv)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return got, err
}

func TestLaunchFlags(t *testing.T) {
	tests := []struct {
		argv []string
		want LaunchOptions
	}{
		{[]string{"t.yaml"}, LaunchOptions{File: "t.yaml", Output: "table"}},
		{[]string{"-d", "-n", "x", "--env", "A=1", "--env", "B=2=3", "t.yaml"}, LaunchOptions{File: "t.yaml", Name: "x", Detach: true, Envs: []string{"A=1", "B=2=3"}, Output: "table"}},
		{[]string{"--use-spot=false", "--region", "us-east-1", "--retry-failed", "t.yaml"}, LaunchOptions{File: "t.yaml", UseSpotSet: true, Region: "us-east-1", RetryFailed: true, Output: "table"}},
		{[]string{"--no-use-spot", "t.yaml"}, LaunchOptions{File: "t.yaml", UseSpotSet: true, Output: "table"}},
		{[]string{"--use-spot", "t.yaml"}, LaunchOptions{File: "t.yaml", UseSpot: true, UseSpotSet: true, Output: "table"}},
		// The flags SkyPilot users type.
		{[]string{"--gpus", "A100:8", "--cpus", "8+", "--memory", "32GB+", "--num-nodes", "2", "--infra", "aws/us-east-1",
			"--env-file", ".env", "--secret", "TOKEN", "-y", "t.yaml"},
			LaunchOptions{File: "t.yaml", GPUs: "A100:8", CPUs: "8+", Memory: "32GB+", NumNodes: 2, NumNodesSet: true,
				Infra: "aws/us-east-1", EnvFile: ".env", Secrets: []string{"TOKEN"}, Yes: true, Output: "table"}},
		{[]string{"--num-nodes", "0", "t.yaml"}, LaunchOptions{File: "t.yaml", NumNodesSet: true, Output: "table"}},
		{[]string{"-t", "m6i.large", "--disk-size", "1TB", "--disk-tier", "best", "--network-tier", "best", "--image-id", "docker:ubuntu",
			"--ports", "8080", "--ports", "10000-10010", "--workdir", "src", "t.yaml"},
			LaunchOptions{File: "t.yaml", Instance: "m6i.large", DiskSize: "1TB", DiskTier: "best", NetworkTier: "best",
				ImageID: "docker:ubuntu", Ports: []string{"8080", "10000-10010"}, Workdir: "src", Output: "table"}},
		{[]string{"--dry-run", "-o", "json", "t.yaml"}, LaunchOptions{File: "t.yaml", DryRun: true, Output: "json"}},
	}
	for _, tc := range tests {
		got, err := parse(t, NewCmdLaunch, tc.argv)
		if err != nil {
			t.Fatalf("%v: %v", tc.argv, err)
		}
		if diff := cmp.Diff(tc.want, *got); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tc.argv, diff)
		}
	}
	for _, argv := range [][]string{
		{},                                    // no file
		{"-o", "json", "t.yaml"},              // -o without --dry-run
		{"--dry-run", "-o", "yaml", "t.yaml"}, // not a format
		{"--use-spot", "--no-use-spot", "t.yaml"},
	} {
		if _, err := parse(t, NewCmdLaunch, argv); exitCode(err) != ExitUsage {
			t.Errorf("launch %v: exit %d (%v), want 2", argv, exitCode(err), err)
		}
	}
	f, _, errb := testFactory()
	if code := Execute(f, []string{"jobs", "launch", "--num-nodes", "two", "t.yaml"}); code != ExitUsage || !strings.Contains(errb.String(), "--num-nodes") {
		t.Errorf("--num-nodes two: exit %d, %s", code, errb)
	}
}

func TestVarFlagsTakeABareKeyFromTheEnvironment(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"HF_TOKEN": "hf_abc", "EMPTY": ""}[k]
		return v, ok
	}
	got, err := varFlags("--env", []string{"HF_TOKEN", "EMPTY", "A=x=y", "B="}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"HF_TOKEN": "hf_abc", "EMPTY": "", "A": "x=y", "B": ""}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"UNSET", "=1"} {
		_, err := varFlags("--secret", []string{bad}, lookup)
		if exitCode(err) != ExitUsage || !strings.Contains(fmt.Sprint(err), "--secret") {
			t.Errorf("--secret %s: %v (exit %d), want a usage error naming --secret", bad, err, exitCode(err))
		}
	}
	if _, err := varFlags("--env", []string{"UNSET"}, lookup); !strings.Contains(fmt.Sprint(err), "pass --env UNSET=VALUE") {
		t.Errorf("--env UNSET: %v, want the fix", err)
	}
}

func TestLaunchRequestFromFlags(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	env := filepath.Join(dir, ".env")
	if err := os.WriteFile(env, []byte("A=from-file\nB=from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, _, _ := testFactory()
	f.LookupEnv = func(k string) (string, bool) { return map[string]string{"S": "secret"}[k], k == "S" }
	req, err := launchRequest(f, &LaunchOptions{File: "t.yaml", EnvFile: env, Envs: []string{"B=from-flag", "C=c"},
		Secrets: []string{"S"}, GPUs: "L4", NumNodes: 0, NumNodesSet: true, UseSpotSet: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"A": "from-file", "B": "from-flag", "C": "c"}, req.Envs); diff != "" {
		t.Errorf("--env wins over --env-file (-want +got):\n%s", diff)
	}
	if req.Secrets["S"] != "secret" || req.GPUs != "L4" || req.NumNodes == nil || *req.NumNodes != 0 || req.UseSpot == nil || *req.UseSpot {
		t.Errorf("request %+v", req)
	}
	if req.Dir != dir {
		t.Errorf("Dir %q, want the working directory %q", req.Dir, dir)
	}
	for _, opts := range []*LaunchOptions{
		{File: "t.yaml", EnvFile: filepath.Join(dir, "missing.env")},
		{File: "t.yaml", Secrets: []string{"NOT_SET"}},
	} {
		if _, err := launchRequest(f, opts); exitCode(err) != ExitUsage {
			t.Errorf("%+v: %v, want a usage error", opts, err)
		}
	}
}

func TestParseEnvFile(t *testing.T) {
	lookup := func(k string) (string, bool) {
		v, ok := map[string]string{"HOME": "/home/u", "FROM_ENV": "env"}[k]
		return v, ok
	}
	text := "\ufeff# a comment\n" +
		"\n" +
		"PLAIN=value\n" +
		"export EXPORTED = spaced  \n" +
		"INLINE=abc # a note\n" +
		"HASH=abc#not-a-note\n" +
		"ONLY_NOTE= # nothing\n" +
		"EMPTY=\n" +
		"SINGLE='a b # c \\' d'\n" +
		"DOUBLE=\"x\\ty\\nz \\\" q\"  # note\n" +
		"MULTI=\"line1\nline2\"\n" +
		"'QUOTED_KEY'=k\n" +
		"REF=${PLAIN}-${FROM_ENV}-${NOPE}-${NOPE:-dflt}-$PLAIN\n" +
		"CRLF=yes\r\n" +
		"PLAIN=again\n"
	got, err := parseEnvFile(text, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"PLAIN": "again", "EXPORTED": "spaced", "INLINE": "abc", "HASH": "abc#not-a-note", "ONLY_NOTE": "", "EMPTY": "",
		"SINGLE": "a b # c ' d", "DOUBLE": "x\ty\nz \" q", "MULTI": "line1\nline2", "QUOTED_KEY": "k",
		"REF": "value-env--dflt-$PLAIN", "CRLF": "yes",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for text, wantErr := range map[string]string{
		"A=1\nNOVALUE\n":       "line 2: NOVALUE has no value; write NOVALUE=VALUE",
		"A=1\n\nB=\"open\n":    `line 3: the value of B opens a " quote that is not closed`,
		"A='x' trailing\n":     `line 1: cannot read "trailing"`,
		"=1\n":                 `line 1: cannot read "=1"`,
		"A=1\nBAD-KEY=2\n":     "line 2: BAD-KEY is not a valid variable name",
		"A=\"x\nC=\"\nB='open": `line 3: the value of B opens a ' quote`,
	} {
		_, err := parseEnvFile(text, lookup)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: %v, want %q", text, err, wantErr)
		}
	}
}

func TestSeveralProblemsAreCountedOnTop(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&schema.ValidationError{Problems: []schema.Problem{{Path: "workdir", Message: "is gone"}}}, "error: workdir: is gone\n"},
		{&schema.ValidationError{Problems: []schema.Problem{{Path: "workdir", Message: "is gone"}, {Path: "envs.A", Message: "is required"}}},
			"error: 2 problems in the task file:\nworkdir: is gone\nenvs.A: is required\n"},
		{&schema.ValidationError{Problems: []schema.Problem{{Path: "--cpus", Value: `"x"`, Message: "is bad"}, {Path: "run", Message: "is missing"}}},
			"error: 2 problems in the task file and the command line:\n--cpus: \"x\" is bad\nrun: is missing\n"},
	} {
		var b bytes.Buffer
		printError(&b, tc.err)
		if b.String() != tc.want {
			t.Errorf("printed %q, want %q", b.String(), tc.want)
		}
	}
}

func TestRetryAndCancelFlags(t *testing.T) {
	got, err := parse(t, NewCmdRetry, []string{"3", "4", "--reason", "flaky", "--set", "envs.A=1", "--set", "run=echo a=b"})
	if err != nil {
		t.Fatal(err)
	}
	want := RetryOptions{IDs: []int64{3, 4}, Reason: "flaky", Sets: []string{"envs.A=1", "run=echo a=b"}, Output: "table"}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got, err = parse(t, NewCmdRetry, []string{"7", "--reason", "disk full", "--from-failed-task"})
	if err != nil {
		t.Fatal(err)
	}
	want = RetryOptions{IDs: []int64{7}, Reason: "disk full", FromFailedTask: true, Output: "table"}
	if diff := cmp.Diff(want, *got); diff != "" {
		t.Errorf("--from-failed-task (-want +got):\n%s", diff)
	}
	for _, argv := range [][]string{
		{"3", "--status", "FAILED", "--reason", "x"}, // ids and a filter
		{"abc", "--reason", "x"},                     // not an id
		{"3", "--reason", "x", "-o", "yaml"},         // bad output
	} {
		if _, err := parse(t, NewCmdRetry, argv); exitCode(err) != ExitUsage {
			t.Errorf("retry %v: exit %d (%v), want 2", argv, exitCode(err), err)
		}
	}
	for _, argv := range [][]string{{}, {"1", "--all"}, {"-n", "x", "--all"}} {
		if _, err := parse(t, NewCmdCancel, argv); exitCode(err) != ExitUsage {
			t.Errorf("cancel %v: exit %d, want 2", argv, exitCode(err))
		}
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{&schema.ValidationError{Problems: []schema.Problem{{Path: "run", Message: "missing"}}}, ExitUsage},
		{fmt.Errorf("launch: %w", &contract.UsageError{Err: errors.New("x")}), ExitUsage},
		{&contract.KnownFailureError{Failure: &contract.FailureView{JobID: 1}}, ExitKnownFailure},
		{&exitError{code: ExitFailed}, ExitFailed},
		{errors.New("disk full"), ExitFailed},
	}
	for _, tc := range tests {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.want)
		}
	}
}

// fakeService answers the queue with fixed jobs.
type fakeService struct {
	Service
	jobs []contract.JobView
}

func (s *fakeService) Queue(context.Context, contract.QueueRequest) ([]contract.JobView, error) {
	return s.jobs, nil
}
func (s *fakeService) Close() error { return nil }

func TestQueueTable(t *testing.T) {
	f, out, _ := testFactory()
	now := f.Now()
	start := now.Add(-90 * time.Second)
	one, orig := 1, int64(7)
	res, loc := "1x[A100:8]", "aws/us-east-1a"
	f.Service = func(context.Context) (Service, error) {
		return &fakeService{jobs: []contract.JobView{{ID: 9, Name: "train", Status: "RUNNING", NumTasks: 3, CurrentTask: 1,
			RecoveryCount: 2, ExitCodes: []*int{&one, nil}, RetryOf: &orig, SubmittedAt: now.Add(-2 * time.Minute), StartedAt: &start,
			Resources: &res, Location: &loc}}}, nil
	}
	if code := Execute(f, []string{"jobs", "queue"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"ID", "NAME", "TASK", "RESOURCES", "LOCATION", "SUBMITTED", "DURATION", "#RECOV", "STATUS", "EXIT", "RETRY", "OF"},
		{"9", "train", "2/3", "1x[A100:8]", "aws/us-east-1a", "2m", "ago", "1m", "30s", "2", "RUNNING", "1,?", "7"},
	}
	var got [][]string
	for _, l := range lines {
		got = append(got, strings.Fields(l))
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("queue table (-want +got):\n%s", diff)
	}
}

// OWNER is shown when the jobs have more than one owner, TASK and RETRY
// OF only when a job is a pipeline or a retry; a job not placed yet, or
// stored before its resources were kept, shows "-". A team's queue with
// a pipeline, and one user's with a retried pipeline, keep to 120 columns.
func TestQueueColumns(t *testing.T) {
	str := func(s string) *string { return &s }
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	start, orig, one := now.Add(-2*time.Hour-3*time.Minute), int64(4), 1
	alice := contract.JobView{ID: 12, Name: "train-llama", Owner: str("alice"), Status: "RUNNING", NumTasks: 1,
		Resources: str("2x[CPU:4+]"), Location: str("aws/us-east-1a"), SubmittedAt: now.Add(-12 * time.Hour), StartedAt: &start, RecoveryCount: 3}
	bob := contract.JobView{ID: 11, Name: "eval-llama", Owner: str("bob"), Status: "FAILED_PRECHECKS", NumTasks: 3,
		Resources: str("1x[A100:8][Spot]"), SubmittedAt: now.Add(-40 * time.Minute), RetryOf: &orig, ExitCodes: []*int{&one, nil}}
	bobFirst, bobAsAlice := bob, bob
	bobFirst.RetryOf = nil
	bobAsAlice.Owner = alice.Owner
	old := contract.JobView{ID: 3, Name: "old", Owner: str("alice"), Status: "SUCCEEDED", NumTasks: 1, SubmittedAt: now.Add(-72 * time.Hour)}
	for _, tc := range []struct {
		jobs    []contract.JobView
		headers string
		rows    []string
	}{
		{[]contract.JobView{alice, old}, "ID NAME RESOURCES LOCATION SUBMITTED DURATION #RECOV STATUS EXIT",
			[]string{"12 train-llama 2x[CPU:4+] aws/us-east-1a 12h ago 2h 3m 0s 3 RUNNING -", "3 old - - 3d ago - 0 SUCCEEDED -"}},
		{[]contract.JobView{alice, bobFirst}, "ID NAME OWNER TASK RESOURCES LOCATION SUBMITTED DURATION #RECOV STATUS EXIT",
			[]string{"12 train-llama alice - 2x[CPU:4+] aws/us-east-1a 12h ago 2h 3m 0s 3 RUNNING -",
				"11 eval-llama bob 1/3 1x[A100:8][Spot] - 40m ago - 0 FAILED_PRECHECKS 1,?"}},
		{[]contract.JobView{alice, bobAsAlice}, "ID NAME TASK RESOURCES LOCATION SUBMITTED DURATION #RECOV STATUS EXIT RETRY OF",
			[]string{"12 train-llama - 2x[CPU:4+] aws/us-east-1a 12h ago 2h 3m 0s 3 RUNNING - -",
				"11 eval-llama 1/3 1x[A100:8][Spot] - 40m ago - 0 FAILED_PRECHECKS 1,? 4"}},
	} {
		f, out, _ := testFactory()
		if err := printQueue(f, tc.jobs); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		var got []string
		for _, l := range lines {
			if len(l) > 120 {
				t.Errorf("a line of %d columns, over 120:\n%s", len(l), out)
			}
			got = append(got, strings.Join(strings.Fields(l), " "))
		}
		if diff := cmp.Diff(append([]string{tc.headers}, tc.rows...), got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	}
}

func TestPrintJSONListIsPrintJSON(t *testing.T) {
	one := 1
	for _, items := range [][]contract.JobView{nil, {}, {{ID: 1, Name: "a<b>"}}, {{ID: 1, ExitCodes: []*int{&one, nil}}, {ID: 2, Overrides: []contract.Override{{Path: "p"}}}}} {
		var want, got bytes.Buffer
		if items == nil {
			printJSON(&want, []contract.JobView{})
		} else {
			printJSON(&want, items)
		}
		if err := printJSONList(&got, items); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.String(), got.String()); diff != "" {
			t.Errorf("%d items (-printJSON +printJSONList):\n%s", len(items), diff)
		}
	}
}

func TestShowListsPorts(t *testing.T) {
	for _, tc := range []struct {
		tasks []contract.TaskView
		want  string
	}{
		{[]contract.TaskView{{Ports: []string{"8080", "10000-10010"}}}, "Ports:         8080, 10000-10010\n"},
		{[]contract.TaskView{{Task: 0, Name: "a", Ports: []string{}}, {Task: 1, Name: "b", Ports: []string{"22", "80"}}}, "  1     b     "},
	} {
		f, out, _ := testFactory()
		d := &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "RUNNING"}, Tasks: tc.tasks}
		if err := printShow(f, d); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("show printed\n%s\nwant it to contain %q", out, tc.want)
		}
		if len(tc.tasks) > 1 && (!strings.Contains(out.String(), "PORTS") || !strings.Contains(out.String(), "22,80")) {
			t.Errorf("the tasks table lacks the ports:\n%s", out)
		}
	}
}

func TestShowSaysFailuresAgainstTheBudget(t *testing.T) {
	for _, tc := range []struct {
		tasks []contract.TaskView
		total int
		want  string
	}{
		{[]contract.TaskView{{RestartsOnErrors: 2, MaxRestartsOnErrors: 1}}, 2, "Failures: 2, restarts on error left 0 of 1"},
		{[]contract.TaskView{{RestartsOnErrors: 0, MaxRestartsOnErrors: 2}}, 0, "Failures: 0, restarts on error left 2 of 2"},
		{[]contract.TaskView{{RestartsOnErrors: 1, MaxRestartsOnErrors: 2}}, 1, "Failures: 1, restarts on error left 1 of 2"},
		{[]contract.TaskView{{RestartsOnErrors: 1, MaxRestartsOnErrors: 3}, {RestartsOnErrors: 1}}, 2, "Failures: 2   "},
	} {
		f, out, _ := testFactory()
		d := &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "FAILED", RestartsOnErrors: tc.total}, Tasks: tc.tasks}
		if err := printShow(f, d); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("show printed\n%s\nwant it to contain %q", out, tc.want)
		}
	}
}

func TestIndentJSONIsJSONIndent(t *testing.T) {
	for _, src := range []string{
		`{}`, `[]`, `{"a":[]}`, `{"a":{}}`, `[1,2,[3,{}],{"b":null}]`,
		`{"s":"a\"b,c:{[]}\\","t":"\u003chtml\u003e","n":-1.5e3,"x":[{"y":[true,false]}]}`,
		`{"overrides":[{"path":"envs.A","old":"","new":"x"}],"exit_codes":[0,null,3],"retry_of":null}`,
	} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(src), "  ", "  "); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if got := indentJSON(nil, []byte(src), "  "); string(got) != want.String() {
			t.Errorf("indentJSON(%s) =\n%s\nwant\n%s", src, got, want.String())
		}
	}
}

// FuzzIndentJSON holds indentJSON to json.Indent on any valid JSON, made
// compact first as json.Marshal writes it.
func FuzzIndentJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1,{"a":"]\"}"},[]]`, `"x"`, `{"a":{"b":[null,{}]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(s)) != nil {
			return
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "  ", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentJSON(nil, compact.Bytes(), "  "); string(got) != want.String() {
			t.Errorf("indentJSON(%s) =\n%s\nwant\n%s", compact.Bytes(), got, want.String())
		}
	})
}

func TestDryRunPrintsThePlanAndOpensNoService(t *testing.T) {
	region, typ, cpus := "us-east-1", "m6i.large", "2+"
	name, workdir := "train", "/proj/code"
	plan := &contract.Plan{Name: "train", InputKey: strPtr("abc"), Missing: []string{"envs.HF_TOKEN: is required at launch"}, Warnings: []string{"service: ignored"}, Tasks: []contract.TaskPlan{{
		Task: 0, Name: &name, NumNodes: 2, Ports: []string{"8080"}, Workdir: &workdir,
		FileMounts: []contract.MountPlan{{Path: "/data", Source: "/proj/data"}}, Envs: []string{"HF_TOKEN"}, Secrets: []string{},
		Strategy: "FAILOVER", RecoverOnExitCodes: []int{29},
		Placements: []contract.PlacementPlan{
			{Cloud: "local", Region: strPtr("local"), Zone: strPtr("local-a"), ResolvedBy: "sortie"},
			{Cloud: "aws", Region: &region, ResolvedBy: "controller", InstanceType: &typ, CPUs: &cpus, UseSpot: true},
			{Cloud: "gcp", ResolvedBy: "controller"},
		},
	}}}
	for _, tc := range []struct {
		argv []string
		want []string
	}{
		{[]string{"jobs", "launch", "--dry-run", "t.yaml", "--env", "HF_TOKEN=x"}, []string{
			"Plan for job train (dry run: nothing stored, nothing started)", "Task 0: train   nodes: 2",
			"FAILOVER, max_restarts_on_errors 0, recover_on_exit_codes 29",
			"1  local/local/local-a", "-", "sortie", "2  aws/us-east-1 ", "m6i.large, 2+ CPUs", "yes", "3  gcp (any region)",
			"Ports:       8080", "Workdir:     /proj/code", "/data ← /proj/data", "Envs:        HF_TOKEN", "Secrets:     none",
			"resolved by the controller are listed as requested",
			"a launch from here would be refused until these are given:\n  envs.HF_TOKEN: is required at launch"}},
	} {
		f, out, errb := testFactory()
		var asked contract.LaunchRequest
		f.Plan = func(_ context.Context, req contract.LaunchRequest) (*contract.Plan, error) {
			asked = req
			return plan, nil
		}
		f.Service = func(context.Context) (Service, error) { t.Fatal("a dry run opened the service"); return nil, nil }
		if code := Execute(f, tc.argv); code != 0 {
			t.Fatalf("%v: exit %d", tc.argv, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("plan lacks %q:\n%s", w, out)
			}
		}
		if !strings.Contains(errb.String(), "note: the file is valid; a launch from here would be refused until 1 missing input(s) are given") {
			t.Errorf("stderr %q lacks the note of what is missing", errb)
		}
		if asked.Envs["HF_TOKEN"] != "x" || asked.File != "t.yaml" {
			t.Errorf("request %+v", asked)
		}
	}
	f, out, _ := testFactory()
	f.Plan = func(context.Context, contract.LaunchRequest) (*contract.Plan, error) { return plan, nil }
	if code := Execute(f, []string{"jobs", "launch", "--dry-run", "-o", "json", "t.yaml"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	var want bytes.Buffer
	printJSON(&want, plan)
	if out.String() != want.String() {
		t.Errorf("-o json printed\n%s\nwant\n%s", out, want.String())
	}
}

func strPtr(s string) *string { return &s }

// A config.yaml that cannot be used is bad input: exit status 2.
func TestConfigErrorsAreUsageErrors(t *testing.T) {
	err := fmt.Errorf("open the service: %w", &config.Error{Path: "/h/config.yaml", Problems: []schema.Problem{{Line: 2, Path: "controller.poll_interval", Message: "1ns is out of range"}}})
	if got := exitCode(err); got != ExitUsage {
		t.Errorf("exit %d for %v, want %d", got, err, ExitUsage)
	}
}

func TestShowListsNotices(t *testing.T) {
	at := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	deadline, asked, ended := at.Add(2*time.Minute), at.Add(800*time.Millisecond), at.Add(95*time.Second)
	head := ended.Sub(asked).Milliseconds()
	f, out, _ := testFactory()
	d := &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "RUNNING"}, Attempts: []contract.AttemptView{
		{Task: 0, Attempt: 1, StartedAt: at.Add(-time.Hour), EndedAt: &ended, ReplacedAt: &asked, HeadStartMS: &head,
			Notice: &contract.NoticeView{Kind: "spot-interruption", Source: "aws-imds", At: at, Deadline: &deadline}},
		{Task: 0, Attempt: 2, StartedAt: asked, ReplacedAt: &asked,
			Notice: &contract.NoticeView{Kind: "preempted", Source: "gce-metadata", At: at}},
		{Task: 0, Attempt: 3, StartedAt: asked},
	}}
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Preemption notices:",
		"  0     1        spot-interruption  aws-imds      2026-11-30T11:00:00Z  2026-11-30T11:02:00Z  2026-11-30T11:00:00Z  1m34.2s",
		"  0     2        preempted          gce-metadata  2026-11-30T11:00:00Z  -                     2026-11-30T11:00:00Z  not ended yet",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show printed\n%s\nwant it to contain %q", out, want)
		}
	}
	if strings.Count(out.String(), "\n  0     ") != 5 { // 3 attempts, 2 notices
		t.Errorf("want a notice line for each attempt with a notice only:\n%s", out)
	}
}

func TestShowListsNotifications(t *testing.T) {
	f, out, _ := testFactory()
	now := f.Now()
	next := now.Add(4 * time.Second)
	code, failed, refused := 204, "try 2: 503 Service Unavailable", "try 1: 401 Unauthorized"
	d := &contract.JobDetail{JobView: contract.JobView{ID: 1, Status: "FAILED"}, Notifications: []contract.NotificationView{
		{Event: "status", Status: "RUNNING", URL: "https://h.example.com/a", State: "delivered", Tries: 1, HTTPStatus: &code},
		{Event: "failed", Status: "FAILED", URL: "https://h.example.com/a", State: "pending", Tries: 2, Error: &failed, NextTryAt: &next},
		{Event: "failed", Status: "FAILED", URL: "https://h.example.com/\x1b[2J", State: "failed", Tries: 1, Error: &refused},
	}}
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Notifications:\n  EVENT   STATUS   WEBHOOK",
		"  status  RUNNING  https://h.example.com/a        delivered  1      HTTP 204",
		"  failed  FAILED   https://h.example.com/a        pending    2      try 2: 503 Service Unavailable; next try in 4s",
		`https://h.example.com/\x1b[2J  failed     1      try 1: 401 Unauthorized`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show printed\n%s\nwant it to contain %q", out, want)
		}
	}
}

// show and release take one job's ID and an output format.
func TestOneJobCommands(t *testing.T) {
	if got, err := parse(t, NewCmdShow, []string{"12", "-o", "json"}); err != nil || *got != (ShowOptions{ID: 12, Output: "json"}) {
		t.Errorf("show 12 -o json: %+v, %v", got, err)
	}
	if got, err := parse(t, NewCmdRelease, []string{"7"}); err != nil || *got != (ReleaseOptions{ID: 7, Output: "table"}) {
		t.Errorf("release 7: %+v, %v", got, err)
	}
	for _, argv := range [][]string{{"x"}, {"1", "2"}, {}, {"3", "-o", "yaml"}} {
		if _, err := parse(t, NewCmdRelease, argv); exitCode(err) != ExitUsage {
			t.Errorf("release %q: %v, want a usage error", argv, err)
		}
		if _, err := parse(t, NewCmdShow, argv); exitCode(err) != ExitUsage {
			t.Errorf("show %q: %v, want a usage error", argv, err)
		}
	}
}

// The retry chain writes each override as the retry did: a value the
// task left out is "(unset)".
func TestShowChainSaysUnsetOverrides(t *testing.T) {
	f, out, _ := testFactory()
	orig := int64(1)
	d := &contract.JobDetail{JobView: contract.JobView{ID: 2, Status: "RUNNING", RetryOf: &orig}, Chain: []contract.JobView{
		{ID: 1, Status: "FAILED"},
		{ID: 2, Status: "RUNNING", RetryOf: &orig, Overrides: []contract.Override{{Path: "envs.SEED", New: "7"}}},
	}}
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "[envs.SEED: (unset) → 7]") {
		t.Errorf("the chain does not say the SEED was unset:\n%s", out)
	}
}

type failuresFake struct {
	Service
	fs []contract.FailureView
}

func (s *failuresFake) Failures(context.Context) ([]contract.FailureView, error) { return s.fs, nil }
func (s *failuresFake) Close() error                                             { return nil }

// A known failure of an unnamed task is named by its position, never left
// blank.
func TestFailuresNameTheTask(t *testing.T) {
	f, out, _ := testFactory()
	zero, two := 0, 2
	f.Service = func(context.Context) (Service, error) {
		return &failuresFake{fs: []contract.FailureView{
			{InputKey: "8c1f0e5a2b9d0000", JobID: 12, Task: &zero, Status: "FAILED", RecordedAt: f.Now()},
			{InputKey: "7d2e1f6b3c0a0000", JobID: 13, Task: &two, TaskName: "eval", Status: "FAILED", RecordedAt: f.Now()},
		}}, nil
	}
	if code := Execute(f, []string{"jobs", "failures"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || strings.Fields(lines[1])[2] != "0" || !strings.Contains(lines[2], " 2 (eval) ") {
		t.Errorf("failures:\n%s", out)
	}
}

// Each known failure shows its verdict and evidence; flaky inputs say how
// often they were.
func TestFailuresShowTheVerdict(t *testing.T) {
	f, out, _ := testFactory()
	zero, three, nought := 0, 3, 0
	f.Service = func(context.Context) (Service, error) {
		return &failuresFake{fs: []contract.FailureView{
			{InputKey: "8c1f0e5a2b9d0000", JobID: 12, Task: &zero, Status: "FAILED", RecordedAt: f.Now(), Verdict: contract.VerdictDeterministic,
				Evidence: []contract.EvidenceView{{Attempt: 1, ExitCodes: []*int{&three}, Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"},
					{Attempt: 2, ExitCodes: []*int{&three}, Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b"}}},
			{InputKey: "7d2e1f6b3c0a0000", JobID: 13, Task: &zero, Status: "SUCCEEDED", RecordedAt: f.Now(), Verdict: contract.VerdictFlaky, Flaky: 3, Runs: 4,
				Evidence: []contract.EvidenceView{{Attempt: 1, ExitCodes: []*int{&three}, Cloud: "sim", Region: "sim-east", Zone: "sim-east-a"},
					{Attempt: 2, ExitCodes: []*int{&nought}, Cloud: "sim", Region: "sim-east", Zone: "sim-east-b"}}},
			{InputKey: "6a2e1f6b3c0a0000", JobID: 14, Task: &zero, Status: "FAILED", RecordedAt: f.Now(), Verdict: contract.VerdictUnconfirmed},
		}}, nil
	}
	if code := Execute(f, []string{"jobs", "failures"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"deterministic #1 exit 3 in aws/us-east-1/us-east-1a, #2 exit 3 in aws/us-east-1/us-east-1b",
		"flaky (3 of 4 runs) #1 exit 3 in sim/sim-east/sim-east-a, #2 exit 0 in sim/sim-east/sim-east-b",
		"unconfirmed - 0 seconds ago",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), want) {
			t.Errorf("failures lack %q:\n%s", want, out)
		}
	}
}

// `jobs show` marks the confirming attempt and says how often the inputs
// were flaky.
func TestShowConfirmingAttempt(t *testing.T) {
	f, out, _ := testFactory()
	one := 1
	d := &contract.JobDetail{JobView: contract.JobView{ID: 7, Status: "SUCCEEDED", SubmittedAt: f.Now()},
		Attempts: []contract.AttemptView{{Task: 0, Attempt: 1, StartedAt: f.Now()}, {Task: 0, Attempt: 2, Confirms: &one, StartedAt: f.Now()}},
		Flaky:    &contract.FlakyCount{Flaky: 3, Runs: 4}}
	if err := printShow(f, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"flaky 3 of 4 runs", "2 (confirms 1)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}
