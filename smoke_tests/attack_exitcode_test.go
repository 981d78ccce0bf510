package smoke_tests

import (
	"encoding/json"
	"sortie/controller/contract"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A task writes a made-up exit code where the agent keeps its record of the
// node (../exit_code from its working directory, the marker the agent
// leaves on a full disk, and the records directory), then goes on running
// and exits 3. The job ends FAILED with the code the task exited with: the
// forged 0 never ends it SUCCEEDED while it runs, and a forged 29 listed in
// recover_on_exit_codes buys no restart.
func TestAttackForgedExitCode(t *testing.T) {
	forgeAll := func(rec string) string {
		return `printf "` + rec + `\n" > ../exit_code
touch "../exit_code.unwritten.` + dotted(rec) + `"
mkdir -p ../record 2>/dev/null && printf "` + rec + `\n" > ../record/exit_code
sleep 5
exit 3
`
	}
	for _, tc := range []struct{ name, run string }{
		{"a success", `printf "run 0 -\n" > ../exit_code; sleep 5; exit 3`},
		{"a listed code", `printf "run 29 -\n" > ../exit_code; sleep 5; exit 3`},
		{"a success everywhere", forgeAll("run 0 -")},
		{"a listed code everywhere", forgeAll("run 29 -")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			f := e.write("task.yaml", `
resources:
  job_recovery:
    max_restarts_on_errors: 0
    recover_on_exit_codes: [29]
run: |
`+indentRun(tc.run))
			id := e.launch(f)
			d := e.waitFor(id, 60*time.Second, "the job's end or a restart", func(d contract.JobDetail) bool {
				return isTerminal(d.Status) || d.RecoveryCount > 0 || len(d.Attempts) > 1
			})
			b, _ := json.MarshalIndent(d, "", "  ")
			if d.Status != "FAILED" || d.RecoveryCount != 0 || len(d.Attempts) != 1 {
				t.Fatalf("job ended %s with %d recoveries and %d attempts, want FAILED with one attempt:\n%s",
					d.Status, d.RecoveryCount, len(d.Attempts), b)
			}
			if diff := cmp.Diff([][]int{{3}}, codes(d)); diff != "" {
				t.Errorf("exit codes (-want +got):\n%s\n%s", diff, b)
			}
			if a := d.Attempts[0]; a.EndedAt == nil || a.EndedAt.Sub(a.StartedAt) < 4*time.Second {
				t.Errorf("the attempt ended at %v, started at %v: before the task did", a.EndedAt, a.StartedAt)
			}
		})
	}
}

// dotted is a record as the full-disk marker's name carries it.
func dotted(rec string) string {
	out := []byte(rec)
	for i, c := range out {
		if c == ' ' {
			out[i] = '.'
		}
	}
	return string(out)
}

// indentRun indents a block scalar's lines for a YAML run: |.
func indentRun(s string) string {
	var out []byte
	line := true
	for i := 0; i < len(s); i++ {
		if line {
			out = append(out, "  "...)
		}
		out = append(out, s[i])
		line = s[i] == '\n'
	}
	if !line {
		out = append(out, '\n')
	}
	return string(out)
}
