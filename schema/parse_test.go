package schema

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var update = flag.Bool("update", false, "rewrite the expected .json, .warnings and .errors files of testdata from the parser's output")

// TestFixtures parses every file in testdata: each valid/X.yaml must give
// the pipeline in valid/X.json, exactly the warnings in valid/X.warnings
// and the launch problems (Unresolved) in valid/X.unresolved (none when
// there is no such file), each invalid/X.yaml exactly the problems in
// invalid/X.errors, one per line.
func TestFixtures(t *testing.T) {
	valid, _ := filepath.Glob("testdata/valid/*.yaml")
	invalid, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(valid) == 0 || len(invalid) == 0 {
		t.Fatal("no fixtures found")
	}
	for _, file := range valid {
		t.Run(file, func(t *testing.T) {
			p, err := Parse(readFile(t, file), testClouds())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			wantFile := strings.TrimSuffix(file, ".yaml") + ".json"
			if *update {
				b, _ := json.MarshalIndent(p, "", "  ")
				if err := os.WriteFile(wantFile, append(b, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var want Pipeline
			if err := json.Unmarshal(readFile(t, wantFile), &want); err != nil {
				t.Fatalf("read %s: %v", wantFile, err)
			}
			if diff := cmp.Diff(&want, p, cmpopts.IgnoreFields(Pipeline{}, "Warnings")); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
			warnFile := strings.TrimSuffix(file, ".yaml") + ".warnings"
			if *update {
				writeLines(t, warnFile, p.Warnings)
			}
			if diff := cmp.Diff(readLines(t, warnFile), p.Warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
			var unresolved []string
			if err := p.Unresolved(testClouds()); err != nil {
				unresolved = strings.Split(err.Error(), "\n")
			}
			unresolvedFile := strings.TrimSuffix(file, ".yaml") + ".unresolved"
			if *update {
				writeLines(t, unresolvedFile, unresolved)
			}
			if diff := cmp.Diff(readLines(t, unresolvedFile), unresolved, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Unresolved mismatch (-want +got):\n%s", diff)
			}
		})
	}
	for _, file := range invalid {
		t.Run(file, func(t *testing.T) {
			p, err := Parse(readFile(t, file), testClouds())
			if err == nil {
				t.Fatalf("Parse succeeded, want problems; got %+v", p)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *ValidationError: %v", err, err)
			}
			errFile := strings.TrimSuffix(file, ".yaml") + ".errors"
			if *update {
				writeLines(t, errFile, strings.Split(ve.Error(), "\n"))
			}
			want := strings.Split(strings.TrimRight(string(readFile(t, errFile)), "\n"), "\n")
			if diff := cmp.Diff(want, strings.Split(ve.Error(), "\n")); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// readLines reads a file of one item per line; a missing file is no items.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// writeLines writes lines to name, or removes name when there are none.
func writeLines(t *testing.T, name string, lines []string) {
	t.Helper()
	if len(lines) == 0 {
		if err := os.Remove(name); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t *testing.T, yaml string) *Pipeline {
	t.Helper()
	p, err := Parse([]byte(yaml), testClouds())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return p
}

func TestParseShapes(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		get  func(*Pipeline) any
		want any
	}{
		{"scalar exit code becomes a list", "resources: {job_recovery: {recover_on_exit_codes: 29}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery().RecoverOnExitCodes }, []int{29}},
		{"bare strategy, lower case", "resources: {job_recovery: failover}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery() }, JobRecovery{Strategy: Failover}},
		{"strategy mixed case in object", "resources: {job_recovery: {strategy: Eager_Next_Region, max_restarts_on_errors: 2}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery() }, JobRecovery{Strategy: EagerNextRegion, MaxRestartsOnErrors: 2}},
		{"bare none, upper case", "resources: {job_recovery: NONE}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery() }, JobRecovery{Strategy: NoRecovery}},
		{"max_duration in minutes", "resources: {job_recovery: {max_duration: 90m}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery().MaxDuration.D() }, 90 * time.Minute},
		{"max_duration in days", "resources: {job_recovery: {max_duration: \" 3d \"}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery().MaxDuration.String() }, "72h"},
		{"keep_on_failure in minutes", "resources: {job_recovery: {keep_on_failure: 30m}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery().KeepOnFailure.D() }, 30 * time.Minute},
		{"termination_grace", "resources: {job_recovery: {termination_grace: 45s}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery().TerminationGrace.D() }, 45 * time.Second},
		{"keep_on_failure in days", "resources: {job_recovery: {keep_on_failure: 1d}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery().KeepOnFailure.String() }, "24h"},
		{"max_recoveries", "resources: {job_recovery: {max_recoveries: 4}}\nrun: x",
			func(p *Pipeline) any { return *p.Tasks[0].Recovery().MaxRecoveries }, 4},
		{"null job_recovery is the default", "resources: {job_recovery: null}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery() }, JobRecovery{Strategy: EagerNextRegion}},
		{"exit codes 0 and 255 are fine", "resources: {job_recovery: {recover_on_exit_codes: [0, 255]}}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Recovery().RecoverOnExitCodes }, []int{0, 255}},
		{"placement cheapest, any case", "resources: {placement: Cheapest}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Resources.PlacementOrder }, PlaceCheapest},
		{"placement written is the default", "resources: {placement: written}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Resources.PlacementOrder }, ""},
		{"on_demand_after", "resources: {use_spot: true, job_recovery: {on_demand_after: 3, on_demand_after_cost: true}}\nrun: x",
			func(p *Pipeline) any { r := p.Tasks[0].Recovery(); return []any{r.OnDemandAfter, r.OnDemandAfterCost} }, []any{3, true}},
		{"accelerator without count", "resources: {accelerators: T4}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Resources.Accelerators }, map[string]int{"T4": 1}},
		{"cpus number", "resources: {cpus: 8}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Resources.CPUs }, "8"},
		{"memory with unit", "resources: {memory: 512MB}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Resources.Memory }, "0.5"},
		{"infra sets cloud region zone", "resources: {infra: aws/us-east-1/us-east-1a}\nrun: x",
			func(p *Pipeline) any {
				r := p.Tasks[0].Resources
				return Placement{Cloud: r.Cloud, Region: r.Region, Zone: r.Zone}
			}, Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}},
		{"infra wildcard cloud", "resources: {infra: '*/my-region'}\nrun: x",
			func(p *Pipeline) any {
				r := p.Tasks[0].Resources
				return Placement{Cloud: r.Cloud, Region: r.Region}
			}, Placement{Region: "my-region"}},
		{"infra wildcard cloud, region AWS's by name", "resources: {infra: '*/us-east-1'}\nrun: x",
			func(p *Pipeline) any {
				r := p.Tasks[0].Resources
				return Placement{Cloud: r.Cloud, Region: r.Region}
			}, Placement{Cloud: "aws", Region: "us-east-1"}},
		{"envs scalars become strings as SkyPilot's str() makes them", "envs: {A: 1, B: true, C: false, D: x}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Envs }, map[string]string{"A": "1", "B": "True", "C": "False", "D": "x"}},
		{"secrets null kept as a name", "secrets: {TOKEN: null}\nrun: x",
			func(p *Pipeline) any { return p.Tasks[0].Secrets }, map[string]*string{"TOKEN": nil}},
		{"pipeline named by a name-only first document", "name: p\n---\nname: a\nrun: x\n---\nrun: z\n",
			func(p *Pipeline) any { return []string{p.Name, p.Tasks[0].Name, p.Tasks[1].Run} }, []string{"p", "a", "z"}},
		{"pipeline named after its first task otherwise", "name: a\nrun: x\n---\nname: b\nrun: z\n",
			func(p *Pipeline) any { return p.Name }, "a"},
		{"one task after a name document", "name: p\n---\nname: a\nrun: x\n",
			func(p *Pipeline) any { return []any{p.Name, len(p.Tasks)} }, []any{"p", 1}},
		{"leading separator and document end marker", "---\nrun: x\n...\n",
			func(p *Pipeline) any { return p.Tasks[0].Run }, "x"},
		{"separator inside a block scalar is text", "run: |\n  echo a\n  ---\n  echo b\n",
			func(p *Pipeline) any { return p.Tasks[0].Run }, "echo a\n---\necho b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.yaml)
			if diff := cmp.Diff(tt.want, tt.get(p)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	p := mustParse(t, "run: x")
	got := p.Tasks[0]
	want := &Task{
		NumNodes: 1,
		Run:      "x",
		Resources: Resources{
			Cloud:       DefaultCloud,
			JobRecovery: &JobRecovery{Strategy: EagerNextRegion},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	again := got.Clone()
	again.ApplyDefaults(testClouds())
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("ApplyDefaults is not idempotent (-first +second):\n%s", diff)
	}

	// A place named anywhere means the default cloud does not apply.
	for _, y := range []string{
		"resources: {region: my-region}\nrun: x",
		"resources: {any_of: [{cloud: aws}, {cloud: gcp}]}\nrun: x",
		"resources: {ordered: [{infra: gcp/us-central1}]}\nrun: x",
	} {
		if c := mustParse(t, y).Tasks[0].Resources.Cloud; c != "" {
			t.Errorf("%q: cloud defaulted to %q, want it left empty", y, c)
		}
	}
}

func TestRecoveryNeverNil(t *testing.T) {
	task := &Task{Run: "x"}
	if got := task.Recovery(); got.Strategy != EagerNextRegion || got.MaxRestartsOnErrors != 0 {
		t.Errorf("Recovery of an undefaulted task = %+v", got)
	}
	task.Resources.JobRecovery = &JobRecovery{RecoverOnExitCodes: []int{29}}
	rec := task.Recovery()
	rec.RecoverOnExitCodes[0] = 1
	if task.Resources.JobRecovery.RecoverOnExitCodes[0] != 29 {
		t.Error("Recovery returned the task's own slice")
	}
}

func TestValidationErrorIsDetectable(t *testing.T) {
	_, err := Parse([]byte("run: x\nresources: {job_recvery: failover}"), testClouds())
	var ve *ValidationError
	if !errors.As(fmtWrap(err), &ve) {
		t.Fatalf("errors.As failed through wrapping: %v", err)
	}
	want := []Problem{{Path: "resources.job_recvery", Message: `unknown field; did you mean "job_recovery"?`}}
	if diff := cmp.Diff(want, ve.Problems); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var p Problem
	if !errors.As(err, &p) || p.Path != "resources.job_recvery" {
		t.Errorf("a single Problem is not reachable with errors.As: %v", err)
	}
}

func fmtWrap(err error) error { return errors.Join(errors.New("launch train.yaml"), err) }

func TestYAMLErrorLinesCountFromFileTop(t *testing.T) {
	_, err := Parse([]byte("run: a\n---\nrun: b\n---\nrun: c\nrun: d\n"), testClouds())
	if err == nil || !strings.Contains(err.Error(), "tasks[2]: invalid YAML: line 6, column 1:") {
		t.Errorf("error = %v, want tasks[2] with line 6", err)
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"job_recovery", "memory", "cpus", "name", "zone"}
	for in, want := range map[string]string{
		"job_recvery":  "job_recovery",
		"memroy":       "memory",
		"MEMORY":       "memory",
		"cpu":          "cpus",
		"nmae":         "name",
		"accelerators": "",
		"x":            "",
	} {
		if got := suggest(in, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
