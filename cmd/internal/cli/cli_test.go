package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"sortie/controller/service"
	"sortie/controller/store"
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
		{[]string{"t.yaml"}, LaunchOptions{File: "t.yaml"}},
		{[]string{"-d", "-n", "x", "--env", "A=1", "--env", "B=2=3", "t.yaml"}, LaunchOptions{File: "t.yaml", Name: "x", Detach: true, Envs: []string{"A=1", "B=2=3"}}},
		{[]string{"--use-spot=false", "--region", "us-east-1", "--retry-failed", "t.yaml"}, LaunchOptions{File: "t.yaml", UseSpotSet: true, Region: "us-east-1", RetryFailed: true}},
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
	if _, err := parse(t, NewCmdLaunch, []string{}); exitCode(err) != ExitUsage {
		t.Errorf("launch without a file: exit %d", exitCode(err))
	}
	if _, err := parseEnvs([]string{"NOEQUALS"}); exitCode(err) != ExitUsage {
		t.Errorf("bad --env: exit %d", exitCode(err))
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
		{fmt.Errorf("launch: %w", &service.UsageError{Err: errors.New("x")}), ExitUsage},
		{&service.KnownFailureError{Failure: &store.KnownFailure{JobID: 1}}, ExitKnownFailure},
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
	jobs []service.JobView
}

func (s *fakeService) Queue(context.Context, service.QueueRequest) ([]service.JobView, error) {
	return s.jobs, nil
}
func (s *fakeService) Close() error { return nil }

func TestQueueTable(t *testing.T) {
	f, out, _ := testFactory()
	now := f.Now()
	start := now.Add(-90 * time.Second)
	one, orig := 1, int64(7)
	f.Service = func(context.Context) (Service, error) {
		return &fakeService{jobs: []service.JobView{{ID: 9, Name: "train", Status: "RUNNING", NumTasks: 3, CurrentTask: 1,
			RecoveryCount: 2, ExitCodes: []*int{&one, nil}, RetryOf: &orig, SubmittedAt: now.Add(-2 * time.Minute), StartedAt: &start}}}, nil
	}
	if code := Execute(f, []string{"jobs", "queue"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"ID", "NAME", "TASK", "SUBMITTED", "DURATION", "#RECOVERIES", "STATUS", "EXIT", "CODES", "RETRY", "OF"},
		{"9", "train", "2/3", "2", "minutes", "ago", "1m", "30s", "2", "RUNNING", "1,?", "7"},
	}
	var got [][]string
	for _, l := range lines {
		got = append(got, strings.Fields(l))
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("queue table (-want +got):\n%s", diff)
	}
}

func TestPrintJSONListIsPrintJSON(t *testing.T) {
	one := 1
	for _, items := range [][]service.JobView{nil, {}, {{ID: 1, Name: "a<b>"}}, {{ID: 1, ExitCodes: []*int{&one, nil}}, {ID: 2, Overrides: []service.Override{{Path: "p"}}}}} {
		var want, got bytes.Buffer
		if items == nil {
			printJSON(&want, []service.JobView{})
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

func TestShowSaysFailuresAgainstTheBudget(t *testing.T) {
	for _, tc := range []struct {
		tasks []service.TaskView
		total int
		want  string
	}{
		{[]service.TaskView{{RestartsOnErrors: 2, MaxRestartsOnErrors: 1}}, 2, "Failures: 2, budget 1"},
		{[]service.TaskView{{RestartsOnErrors: 1, MaxRestartsOnErrors: 3}, {RestartsOnErrors: 1}}, 2, "Failures: 2   "},
	} {
		f, out, _ := testFactory()
		d := &service.JobDetail{JobView: service.JobView{ID: 1, Status: "FAILED", RestartsOnErrors: tc.total}, Tasks: tc.tasks}
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
