package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
)

// saveOneCluster saves a sim holding one running cluster of job 40 and
// returns the state file's path and the cluster's name.
func saveOneCluster(t *testing.T) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	clk := newClock()
	p, err := Open(path, Config{RunTime: time.Minute, Now: clk.Now, Sleep: clk.SkipErr})
	if err != nil {
		t.Fatal(err)
	}
	c := launch(t, p, 40, 1, 1)
	start(t, runnerFor(t, p, c, 0, 1), 40, 1)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return path, c.Name
}

// A cluster of the state file that cannot be read back is reported broken,
// with the file and the reason; the others are as they were.
func TestACorruptClusterInTheStateFileSpoilsOnlyItself(t *testing.T) {
	path, good := saveOneCluster(t)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, cluster, want string }{
		{"null", `null`, `clusters["c"] is null`},
		{"a null node", `{"name":"c","nodes":[null]}`, `clusters["c"] nodes[0] is null`},
		{"a null task", `{"name":"c","nodes":[{"id":"i","tasks":{"/d":null}}]}`, `nodes[0].tasks["/d"] is null`},
		{"an exit code beyond 255", `{"name":"c","nodes":[{"id":"i","tasks":{"/d":{"code":99999999999}}}]}`, `code 99999999999 is not an exit code (0-255)`},
		{"a preempted rank that is no node", `{"name":"c","preempt_frac":0.5,"preempt_rank":3,"nodes":[{"id":"i"}]}`, `preempt_rank 3 is not a node of its 1`},
		{"another name", `{"name":"d","nodes":[]}`, `is named "d"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			corrupt := strings.Replace(string(b), `"clusters":{`, `"clusters":{"c":`+tc.cluster+`,`, 1)
			if err := os.WriteFile(path, []byte(corrupt), 0o600); err != nil {
				t.Fatal(err)
			}
			clk := newClock()
			p, err := Open(path, Config{RunTime: time.Minute, Now: clk.Now, Sleep: clk.SkipErr})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			ctx := context.Background()
			m, err := p.Status(ctx, []string{"c", good})
			if err != nil {
				t.Fatal(err)
			}
			if m["c"] == nil || !strings.Contains(m["c"].Broken, tc.want) || !strings.Contains(m["c"].Broken, path) {
				t.Errorf("Status of the corrupt cluster: %+v, want it broken saying %q and naming %s", m["c"], tc.want, path)
			}
			if m[good] == nil || m[good].Broken != "" || len(m[good].Nodes) != 1 {
				t.Fatalf("Status of the sound cluster: %+v", m[good])
			}
			if st := poll(t, runnerFor(t, p, m[good], 0, 1)); !st.Started {
				t.Errorf("the sound cluster's task: %+v, want started", st)
			}
			_, err = p.Launch(ctx, provision.ClusterSpec{Name: "c", Placement: east})
			if se := (*provision.StateError)(nil); !errors.As(err, &se) {
				t.Errorf("Launch of the corrupt cluster's name: %v, want a StateError", err)
			}
			if err := p.Terminate(ctx, "c"); err != nil {
				t.Fatal(err)
			}
			if m, _ := p.Status(ctx, []string{"c"}); m["c"] != nil {
				t.Errorf("after Terminate: %+v, want the corrupt cluster gone", m["c"])
			}
			p.Close()
		})
	}
}

func TestAStateFileThatIsNotJSONIsAStateError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte(`{"clusters":`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, Config{})
	if se := (*provision.StateError)(nil); !errors.As(err, &se) || se.Path != path || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("Open: %v, want a StateError naming %s and the fix", err, path)
	}
}

// FuzzStateFile checks, for any state file: Open does not panic, and a sim
// it opens answers every call on every cluster without panicking, and
// reports no exit code outside 0-255.
func FuzzStateFile(f *testing.F) {
	for _, s := range []string{
		`{"clusters":{"c":null}}`,
		`{"seq":3,"capacity":{"sim-east/sim-east-a":1},"clusters":{"c":{"name":"c","region":"sim-east","zone":"sim-east-a","nodes":[{"id":"i","tasks":{"/d":{"key":{"job":1},"started":"2025-03-01T12:00:00Z","code":3}}}],"preempt_frac":0.5,"preempt_rank":0}}}`,
		`{"clusters":{"c":{"name":"c","nodes":[{"id":"i","preempted":true}],"preempt_at":"2025-03-01T12:00:00Z"}}}`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		clk := newClock()
		p, err := Open(path, Config{RunTime: time.Minute, Now: clk.Now, Sleep: clk.SkipErr})
		if err != nil {
			return
		}
		defer p.Close()
		ctx := context.Background()
		all, _ := p.List(ctx)
		var names []string
		for _, c := range all {
			names = append(names, c.Name)
		}
		names = append(names, "c")
		m, _ := p.Status(ctx, names)
		for _, c := range m {
			for rank := range c.Nodes {
				r, err := p.Runner(ctx, c, rank)
				if err != nil {
					continue
				}
				for _, dir := range []string{r.Dir(), r.Dir() + "/attempt-1", "/d"} {
					st, err := node.Poll(ctx, dirRunner{r, dir})
					if err == nil && st.Done && (st.ExitCode < 0 || st.ExitCode > 255) {
						t.Errorf("exit code %d", st.ExitCode)
					}
					node.ReadLog(ctx, dirRunner{r, dir}, 0)
					node.Stop(ctx, dirRunner{r, dir})
				}
				clk.Advance(time.Hour)
				p.Status(ctx, names)
				p.Preempt(c.Name, rank)
			}
			p.Terminate(ctx, c.Name)
		}
	})
}

type dirRunner struct {
	provision.Runner
	dir string
}

func (r dirRunner) Dir() string { return r.dir }
