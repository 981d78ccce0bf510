package provisiontest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/node"
)

func (s suite) commands(t *testing.T) {
	if !s.h.RunsCommands {
		t.Skip("the backend's nodes run no commands")
	}
	e := s.env(t)
	spec := e.spec(9110, 2)
	c := e.launch(e.p, spec)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "data.txt"), []byte("uploaded\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for rank := range c.Nodes {
		t.Run(fmt.Sprintf("rank%d", rank), func(t *testing.T) {
			r, err := e.p.Runner(e.ctx, c, rank)
			if err != nil {
				t.Fatalf("Runner: %v", err)
			}
			defer r.Close()
			if r.Dir() == "" {
				t.Error("Runner.Dir is empty")
			}
			e.exec(t, r)
			e.task(t, r, rank, len(c.Nodes), src)
		})
	}
}

func (e *env) exec(t *testing.T, r provision.Runner) {
	out, err := r.Exec(e.ctx, "echo hello", nil)
	if err != nil || string(out) != "hello\n" {
		t.Errorf("Exec echo = %q, %v; want \"hello\\n\"", out, err)
	}
	out, err = r.Exec(e.ctx, "cat", strings.NewReader("from stdin"))
	if err != nil || string(out) != "from stdin" {
		t.Errorf("Exec cat with stdin = %q, %v", out, err)
	}
	_, err = r.Exec(e.ctx, "echo oops >&2; exit 3", nil)
	var ee *provision.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Exec of a failing command: %v (%T), want *provision.ExitError", err, err)
	}
	if ee.Code != 3 || !strings.Contains(ee.Stderr, "oops") {
		t.Errorf("ExitError = code %d stderr %q, want code 3 with \"oops\"", ee.Code, ee.Stderr)
	}
}

// task runs a task through the node package on r: rank r exits with 3*r.
func (e *env) task(t *testing.T, r provision.Runner, rank, nodes int, src string) {
	st, err := node.Poll(e.ctx, r)
	if err != nil {
		t.Fatalf("Poll before Start: %v", err)
	}
	if st.Started || st.Done {
		t.Fatalf("Poll before Start = %+v, want nothing started", st)
	}
	if err := node.Upload(e.ctx, r, src, "workdir"); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	start := node.StartSpec{
		Setup: `echo "setup $SORTIE_NODE_RANK"`,
		Run:   `cat data.txt; echo "rank $SORTIE_NODE_RANK of $SORTIE_NUM_NODES: $MSG"; exit $((SORTIE_NODE_RANK * 3))`,
		Env: map[string]string{
			"SORTIE_NODE_RANK": fmt.Sprint(rank),
			"SORTIE_NUM_NODES": fmt.Sprint(nodes),
			"MSG":              `it's "$quoted"`,
		},
	}
	if err := node.Start(e.ctx, r, start); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := node.Start(e.ctx, r, start); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	for {
		st, err = node.Poll(e.ctx, r)
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if st.Done {
			break
		}
		if !st.AgentAlive {
			t.Fatalf("agent died without an exit code: %+v", st)
		}
		select {
		case <-e.ctx.Done():
			t.Fatalf("task not done before the deadline: %+v", st)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if st.Phase != node.PhaseRun || st.ExitCode != 3*rank {
		t.Errorf("status = %+v, want run phase exit code %d", st, 3*rank)
	}
	log, err := node.ReadLog(e.ctx, r, 0)
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	want := fmt.Sprintf("setup %d\nuploaded\nrank %d of %d: it's \"$quoted\"\n", rank, rank, nodes)
	if string(log) != want {
		t.Errorf("log = %q, want %q (the task runs once)", log, want)
	}
}
