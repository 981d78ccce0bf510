package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const setBase = `name: train
resources:
  infra: aws/us-east-1
  memory: 16
  job_recovery: {recover_on_exit_codes: [29]}
envs: {A: x}
secrets: {TOKEN: hunter2}
file_mounts: {/data/x.csv: ./x.csv}
run: python train.py
`

func TestApplySet(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		// edit turns the parsed base into the expected result.
		edit func(*Task)
		want []Override
	}{
		{
			name: "memory, env, region, exit codes, run",
			set: []string{"resources.memory=32", "envs.SEED=7", "resources.region=us-west-2",
				"resources.job_recovery.recover_on_exit_codes=[29,30]", "run=echo a: b # c"},
			edit: func(t *Task) {
				t.Resources.Memory = "32"
				t.Envs["SEED"] = "7"
				t.Resources.Region = "us-west-2"
				t.Resources.Infra = "" // region replaces the infra form
				t.Resources.JobRecovery.RecoverOnExitCodes = []int{29, 30}
				t.Run = "echo a: b # c"
			},
			want: []Override{
				{Path: "resources.memory", Old: "16", New: "32"},
				{Path: "envs.SEED", Old: "", New: "7"},
				{Path: "resources.region", Old: "us-east-1", New: "us-west-2"},
				{Path: "resources.job_recovery.recover_on_exit_codes", Old: "[29]", New: "[29,30]"},
				{Path: "run", Old: "python train.py", New: "echo a: b # c"},
			},
		},
		{
			name: "scalar exit code normalised in the diff",
			set:  []string{"resources.job_recovery.recover_on_exit_codes=137"},
			edit: func(t *Task) { t.Resources.JobRecovery.RecoverOnExitCodes = []int{137} },
			want: []Override{{Path: "resources.job_recovery.recover_on_exit_codes", Old: "[29]", New: "[137]"}},
		},
		{
			name: "bare strategy replaces the policy",
			set:  []string{"resources.job_recovery=failover"},
			edit: func(t *Task) { t.Resources.JobRecovery = &JobRecovery{Strategy: Failover} },
			want: []Override{{Path: "resources.job_recovery",
				Old: `{"max_restarts_on_errors":0,"recover_on_exit_codes":[29],"strategy":"EAGER_NEXT_REGION"}`,
				New: `{"max_restarts_on_errors":0,"strategy":"FAILOVER"}`}},
		},
		{
			name: "infra replaces cloud, region and zone",
			set:  []string{"resources.infra=gcp/us-central1/us-central1-a"},
			edit: func(t *Task) {
				t.Resources.Infra = "gcp/us-central1/us-central1-a"
				t.Resources.Cloud, t.Resources.Region, t.Resources.Zone = "gcp", "us-central1", "us-central1-a"
			},
			want: []Override{{Path: "resources.infra", Old: "aws/us-east-1", New: "gcp/us-central1/us-central1-a"}},
		},
		{
			name: "empty value removes a field, which takes its default",
			set:  []string{"resources.infra=", "resources.cloud="},
			edit: func(t *Task) {
				t.Resources.Infra, t.Resources.Region = "", ""
				t.Resources.Cloud = DefaultCloud
			},
			want: []Override{
				{Path: "resources.infra", Old: "aws/us-east-1", New: ""},
				{Path: "resources.cloud", Old: "aws", New: "local"},
			},
		},
		{
			name: "string fields keep quotes' content; a path key may hold dots",
			set:  []string{`envs.A="quoted value"`, "file_mounts./data/x.csv=./y.csv"},
			edit: func(t *Task) {
				t.Envs["A"] = "quoted value"
				t.FileMounts["/data/x.csv"] = "./y.csv"
			},
			want: []Override{
				{Path: "envs.A", Old: "x", New: "quoted value"},
				{Path: "file_mounts./data/x.csv", Old: "./x.csv", New: "./y.csv"},
			},
		},
		{
			name: "secret values never shown",
			set:  []string{"secrets.TOKEN=other", "secrets.NEW=null"},
			edit: func(t *Task) {
				s := "other"
				t.Secrets["TOKEN"] = &s
				t.Secrets["NEW"] = nil
			},
			want: []Override{
				{Path: "secrets.TOKEN", Old: "***", New: "***"},
				{Path: "secrets.NEW", Old: "", New: "null"},
			},
		},
		{
			name: "tasks[0] prefix allowed for one task; a path set twice is one override",
			set:  []string{"tasks[0].num_nodes=2", "num_nodes=4"},
			edit: func(t *Task) { t.NumNodes = 4 },
			want: []Override{{Path: "num_nodes", Old: "1", New: "4"}},
		},
		{
			name: "list items are addressed and appended by index",
			set:  []string{"resources.any_of[0].region=us-east-2", "resources.any_of[1].region=eu-west-1"},
			edit: func(t *Task) {
				t.Resources.AnyOf = []Resources{{Region: "us-east-2"}, {Region: "eu-west-1"}}
			},
			want: []Override{
				{Path: "resources.any_of[0].region", Old: "", New: "us-east-2"},
				{Path: "resources.any_of[1].region", Old: "", New: "eu-west-1"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mustParse(t, setBase)
			before := in.Clone()
			got, overrides, err := ApplySet(in, tt.set, testClouds())
			if err != nil {
				t.Fatalf("ApplySet: %v", err)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("input pipeline changed (-before +after):\n%s", diff)
			}
			want := before.Clone()
			tt.edit(want.Tasks[0])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("pipeline (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, overrides); diff != "" {
				t.Errorf("overrides (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplySetErrors(t *testing.T) {
	tests := []struct {
		name string
		base string
		set  []string
		want []string
	}{
		{"unknown field with a suggestion", setBase, []string{"resources.memroy=32"},
			[]string{`resources.memroy: unknown field; did you mean "memory"?`}},
		{"unknown nested field", setBase, []string{"resources.job_recvery.recover_on_exit_codes=[29]"},
			[]string{`resources.job_recvery: unknown field; did you mean "job_recovery"?`}},
		{"exit code out of range", setBase, []string{"resources.job_recovery.recover_on_exit_codes=[29,300]"},
			[]string{"resources.job_recovery.recover_on_exit_codes[1]: 300 is not an exit code (0-255)"}},
		{"negative restarts", setBase, []string{"resources.job_recovery.max_restarts_on_errors=-1"},
			[]string{"resources.job_recovery.max_restarts_on_errors: -1 is negative; use 0 or more (0: a failure with an unlisted exit code ends the job)"}},
		{"port out of range", setBase, []string{"resources.ports=0"},
			[]string{`resources.ports: 0 is out of range; give a port from 1 to 65535 or a range "LOW-HIGH", e.g. 8080 or "10000-10010"`}},
		{"every problem at once", setBase, []string{"nonsense", "resources.cpus=[", "run.x=1", "resources.any_of[3].cloud=aws", "num_nodes=0"},
			[]string{
				`nonsense: is not an assignment; write PATH=VALUE, e.g. resources.memory=32`,
				`resources.cpus: "[" is not a YAML value: line 1: did not find expected node content`,
				`run.x: run is a string, not a mapping; cannot set x in it`,
				`resources.any_of[3].cloud: resources.any_of has 0 item(s); use an index up to 0`,
				`num_nodes: 0 is less than 1; a task runs on at least one node`,
			}},
		{"pipeline needs a task prefix", "run: a\n---\nrun: b\n", []string{"resources.memory=8", "tasks[2].run=c", "tasks[1].resources.memroy=8"},
			[]string{
				"resources.memory: is ambiguous: the pipeline has 2 tasks; prefix the path with the task, e.g. tasks[0].resources.memory",
				"tasks[2].run: no such task; the pipeline has 2 task(s), tasks[0] to tasks[1]",
				`tasks[1].resources.memroy: unknown field; did you mean "memory"?`,
			}},
		{"bad path syntax", setBase, []string{"resources..memory=1", "resources.any_of[x]=1"},
			[]string{
				`resources..memory: is not a field path; write names separated by dots, with [N] for list items, e.g. resources.any_of[0].region`,
				`resources.any_of[x]: is not a field path: unexpected "[x]"; write names separated by dots, e.g. resources.memory`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := mustParse(t, tt.base)
			before := in.Clone()
			got, overrides, err := ApplySet(in, tt.set, testClouds())
			if err == nil {
				t.Fatalf("ApplySet succeeded: %+v %+v", got, overrides)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *ValidationError: %v", err, err)
			}
			if diff := cmp.Diff(tt.want, strings.Split(ve.Error(), "\n")); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, in); diff != "" {
				t.Errorf("input pipeline changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestApplySetPipeline(t *testing.T) {
	in := mustParse(t, "name: etl\n---\nname: a\nrun: a\n---\nname: b\nrun: b\n")
	got, overrides, err := ApplySet(in, []string{"tasks[1].envs.X=1", "name=etl2"}, testClouds())
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "etl2" || got.Tasks[1].Envs["X"] != "1" || got.Tasks[0].Envs != nil {
		t.Errorf("got name %q, envs %v / %v", got.Name, got.Tasks[0].Envs, got.Tasks[1].Envs)
	}
	want := []Override{{Path: "tasks[1].envs.X", New: "1"}, {Path: "name", Old: "etl", New: "etl2"}}
	if diff := cmp.Diff(want, overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
	if in.Name != "etl" {
		t.Error("input pipeline renamed")
	}
}

func TestParsePath(t *testing.T) {
	tests := map[string][]step{
		"run":                             {{key: "run"}},
		"resources.any_of[2].cpus":        {{key: "resources"}, {key: "any_of"}, {index: 2, isIdx: true}, {key: "cpus"}},
		"envs.A.B":                        {{key: "envs"}, {key: "A.B"}},
		"resources.accelerators.tpu-v2.8": {{key: "resources"}, {key: "accelerators"}, {key: "tpu-v2.8"}},
	}
	for in, want := range tests {
		got, problem := parsePath(in)
		if problem != "" {
			t.Errorf("parsePath(%q): %s", in, problem)
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
			t.Errorf("parsePath(%q) (-want +got):\n%s", in, diff)
		}
	}
}

// Setting accelerators replaces a file's accelerator set or list, as
// SkyPilot's --gpus does, rather than hiding under the candidates it was
// expanded into.
func TestApplySetAcceleratorsReplacesAlternatives(t *testing.T) {
	for _, tt := range []struct{ yaml, set string }{
		{"resources: {accelerators: {A100:1, H100:1}}\nrun: x", "resources.accelerators=L4:1"},
		{"resources: {accelerators: [A100:1, H100:1]}\nrun: x", "resources.gpus=L4:1"},
		{"resources: {gpus: {A100:1, H100:1}}\nrun: x", "resources.accelerators={L4: 1}"},
	} {
		p := mustParse(t, tt.yaml)
		got, _, err := ApplySet(p, []string{tt.set}, testClouds())
		if err != nil {
			t.Fatalf("%s with %s: %v", tt.yaml, tt.set, err)
		}
		r := got.Tasks[0].Resources
		if diff := cmp.Diff(map[string]int{"L4": 1}, r.Accelerators); diff != "" || r.AnyOf != nil || r.Ordered != nil {
			t.Errorf("%s with %s: accelerators %v, any_of %v, ordered %v", tt.yaml, tt.set, r.Accelerators, r.AnyOf, r.Ordered)
		}
	}
	// Candidates that differ in more than accelerators stay, without theirs.
	p := mustParse(t, "resources:\n  accelerators: {A100:1, H100:1}\n  any_of: [{region: us-east-1}, {region: us-west-2}]\nrun: x")
	got, _, err := ApplySet(p, []string{"resources.accelerators=L4:1"}, testClouds())
	if err != nil {
		t.Fatal(err)
	}
	want := []Resources{{Cloud: "aws", Region: "us-east-1"}, {Cloud: "aws", Region: "us-west-2"}}
	if diff := cmp.Diff(want, got.Tasks[0].Resources.AnyOf); diff != "" {
		t.Errorf("any_of (-want +got):\n%s", diff)
	}
}

func TestApplySetLabelKeysWithDots(t *testing.T) {
	p := mustParse(t, "run: x")
	got, _, err := ApplySet(p, []string{"resources.labels.app.kubernetes.io/name=trainer"}, testClouds())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"app.kubernetes.io/name": "trainer"}, got.Tasks[0].Resources.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

// TestApplySetNeverShowsASecret: `--set 'secrets.TOKEN=[hunter2'` echoed
// the value in its error. Every way a secret's value can be refused says
// what to do without it.
func TestApplySetNeverShowsASecret(t *testing.T) {
	in := mustParse(t, "run: x\nsecrets: {TOKEN: old-value}\n")
	_, _, err := ApplySet(in, []string{"secrets.TOKEN=[hunter2"}, testClouds())
	want := "secrets.TOKEN: is not a YAML value (a secret's value is never shown); quote it to set it as text, e.g. secrets.TOKEN='...'"
	if err == nil || err.Error() != want {
		t.Errorf("ApplySet = %v\nwant %s", err, want)
	}
	for _, set := range []string{`secrets.TOKEN="hunter2\q"`, `secrets={TOKEN: [hunter2`, `secrets=*hunter2`, `secrets=hunter2`,
		`secrets.TOKEN=[hunter2]`, `secrets.TOKEN={hunter2: 1}`, `tasks[0].secrets.TOKEN=[hunter2`} {
		_, _, err := ApplySet(in, []string{set}, testClouds())
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ApplySet(%s) = %v; want an error without the value", set, err)
		}
	}
	if _, err := Parse([]byte("run: x\nsecrets: TOKEN=hunter2\n"), testClouds()); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Parse of secrets as a string = %v; want an error without the value", err)
	}
}

// TestApplySetRefusesTrailingContent: `--env 'A="a" "b"'` kept "a" and
// dropped the rest.
func TestApplySetRefusesTrailingContent(t *testing.T) {
	in := mustParse(t, "run: x\n")
	_, _, err := ApplySet(in, []string{`envs.A="a" "b"`}, testClouds())
	want := `envs.A: "\"a\" \"b\"" is not a YAML value: line 1, column 5: something follows the end of the value`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("ApplySet = %v\nwant %s...", err, want)
	}
}
