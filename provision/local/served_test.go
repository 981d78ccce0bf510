package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"sortie/provision/node"
	"sortie/provision/node/agent"
)

// servedBy returns the pid and instance id of the agent server running the
// node in dir.
func servedBy(t *testing.T, dir string) (int, string) {
	t.Helper()
	id, err := os.ReadFile(filepath.Join(dir, "served"))
	if err != nil {
		t.Fatalf("node %s is not run by an agent server: %v", dir, err)
	}
	return node.AgentPID(dir), strings.TrimSpace(string(id))
}

// One agent server runs every node of the home: what one node's task
// leaves behind is ended when that task ends, and nothing of the other
// node's; a kill -9 of the server leaves the node it ran lost, without an
// exit code; once idle it exits, and the next start brings up another.
func TestOneAgentServerRunsEveryLocalNode(t *testing.T) {
	p := newProvider(t)
	_, ra := launchRunning(t, p, "sortie-20-0-1", 1, `setsid sh -c 'echo $$ > left; exec sleep 300' &
while [ ! -s left ]; do sleep 0.01; done
touch ready
while [ ! -e go ]; do sleep 0.01; done`)
	_, rb := launchRunning(t, p, "sortie-21-0-1", 1, `touch ready; sleep 300`)
	a, b := ra[0].Dir(), rb[0].Dir()
	pa, ida := servedBy(t, a)
	pb, idb := servedBy(t, b)
	if pa != pb || ida != idb || pa <= 1 {
		t.Fatalf("nodes run by servers %d (%s) and %d (%s); want one", pa, ida, pb, idb)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pa) + "/cmdline")
	if args := strings.Split(string(cmdline), "\x00"); len(args) < 2 || args[1] != "serve" {
		t.Fatalf("pid %d runs %q, not the agent server", pa, args)
	}
	runB := node.Groups(b)
	if len(runB) != 1 {
		t.Fatalf("node b groups %v, want its run group alone", runB)
	}

	// Node a ends; its leftover goes, node b's task runs on.
	if err := os.WriteFile(filepath.Join(a, "workdir", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node a's exit code", func() bool { return poll(t, ra[0]).Done })
	waitFor(t, "node a's reaped mark", func() bool { return agent.Reaped(a) })
	left, err := os.ReadFile(filepath.Join(a, "workdir", "left"))
	if err != nil {
		t.Fatal(err)
	}
	lp, _ := strconv.Atoi(strings.TrimSpace(string(left)))
	if state, _, ok := procStat(lp); ok {
		t.Errorf("node a's leftover %d (state %s) still there", lp, state)
	}
	if st := poll(t, ra[0]); st.ExitCode != 0 || st.Phase != node.PhaseRun {
		t.Errorf("node a: %+v, want run 0", st)
	}
	if st := poll(t, rb[0]); st.Done || !st.AgentAlive || !anyGroupAlive(runB) {
		t.Fatalf("node b after node a ended: %+v, want running", st)
	}

	// kill -9 of the server: node b is lost, with no exit code.
	if err := syscall.Kill(pa, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node b lost", func() bool { st := poll(t, rb[0]); return st.AgentLost })
	if st := poll(t, rb[0]); st.Done || st.AgentAlive {
		t.Errorf("node b after the server died: %+v, want lost without an exit code", st)
	}
	if err := p.Terminate(t.Context(), "sortie-21-0-1"); err != nil {
		t.Fatal(err)
	}
	// A killed process may show for a moment more before it is a zombie.
	waitFor(t, "node b's task gone after its teardown", func() bool { return !anyGroupAlive(runB) })

	// The next start brings up a new server, which exits once idle.
	_, rc := launchRunning(t, p, "sortie-22-0-1", 1, `touch ready`)
	pc, idc := servedBy(t, rc[0].Dir())
	if idc == ida {
		t.Fatalf("a new node recorded the dead server's id %s", ida)
	}
	waitFor(t, "node c's exit code", func() bool { return poll(t, rc[0]).Done })
	waitFor(t, "the idle server's exit", func() bool {
		state, _, ok := procStat(pc)
		return !ok || state == "Z"
	})
	if exists(filepath.Join(root(p.home), "agent.sock")) {
		t.Error("the idle server left its socket")
	}
}
