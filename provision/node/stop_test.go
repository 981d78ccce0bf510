package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/provision/node"
)

// groupAlive reports whether a process that is not a zombie is in group pgid.
// kill -0 alone is not enough: an init that does not reap keeps zombies.
func groupAlive(t *testing.T, pgid int) bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" && fields[0] != "X" {
			return true
		}
	}
	return false
}

// startSleeping starts a run phase that leaves a process group of several
// processes, and waits until that group exists.
func startSleeping(t *testing.T, r bashRunner, run string) int {
	t.Helper()
	if err := node.Start(context.Background(), r, node.StartSpec{Run: run}); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(r.dir, "workdir", "ready"))
	// The agent records the group just after starting it.
	waitFile(t, filepath.Join(r.dir, "pgid.run"))
	b, err := os.ReadFile(filepath.Join(r.dir, "pgid.run"))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !groupAlive(t, pg) {
		t.Fatalf("run group %d is not alive before Stop", pg)
	}
	return pg
}

func TestStopTerminatesTheRunGroup(t *testing.T) {
	r := newNode(t)
	pg := startSleeping(t, r, "sleep 300 & sleep 300 & touch ready; wait")
	if err := node.Stop(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, r)
	if st.Phase != node.PhaseRun || st.ExitCode != 143 || !st.Stopped {
		t.Errorf("status after Stop = %+v, want run 143, stopped", st)
	}
	if groupAlive(t, pg) {
		t.Errorf("process group %d still has live processes after Stop", pg)
	}
}

func TestStopKillsWhatIgnoresTerm(t *testing.T) {
	r := newNode(t)
	pg := startSleeping(t, r, "trap '' TERM; sleep 300 & touch ready; wait")
	start := time.Now()
	if err := node.StopWithin(context.Background(), r, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %v with a 100ms grace", d)
	}
	st := waitDone(t, r)
	if st.Phase != node.PhaseRun || st.ExitCode != 137 {
		t.Errorf("status after Stop = %+v, want run 137", st)
	}
	if groupAlive(t, pg) {
		t.Errorf("process group %d still has live processes after Stop", pg)
	}
}

func TestStopDuringSetupSkipsRun(t *testing.T) {
	r := newNode(t)
	spec := node.StartSpec{Setup: "touch ready; sleep 300", Run: "echo never"}
	if err := node.Start(context.Background(), r, spec); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(r.dir, "workdir", "ready"))
	if err := node.Stop(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, r)
	if st.Phase != node.PhaseSetup || st.ExitCode != 143 {
		t.Errorf("status after Stop = %+v, want setup 143", st)
	}
	if got := readLog(t, r); strings.Contains(got, "never") {
		t.Errorf("run phase ran after Stop: log %q", got)
	}
}

func TestStopBeforeStartRunsNothing(t *testing.T) {
	r := newNode(t)
	if err := node.Stop(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background(), r, node.StartSpec{Run: "echo never"}); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, r)
	if st.ExitCode != 143 || readLog(t, r) != "" {
		t.Errorf("status %+v, log %q; want exit 143 and nothing run", st, readLog(t, r))
	}
}

func TestStopAfterDoneKeepsExitCode(t *testing.T) {
	r := newNode(t)
	if err := node.Start(context.Background(), r, node.StartSpec{Run: "exit 4"}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, r)
	if err := node.Stop(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); st.ExitCode != 4 {
		t.Errorf("exit code after Stop of a finished task = %d, want 4", st.ExitCode)
	}
}

func TestWrapperDeadWithoutExitCode(t *testing.T) {
	r := newNode(t)
	startSleeping(t, r, "touch ready; sleep 300")
	st, err := node.Poll(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Started || st.Done || !st.AgentAlive || st.Phase != node.PhaseRun {
		t.Fatalf("status of a running task = %+v", st)
	}
	groups := node.Groups(r.dir)
	if len(groups) != 2 {
		t.Fatalf("recorded groups = %v, want the agent's and the run phase's", groups)
	}
	// The node loses the agent, as a reboot or an OOM kill would.
	if err := syscall.Kill(groups[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err = node.Poll(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if !st.AgentAlive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("agent still reported alive 10s after SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !st.Started || st.Done {
		t.Errorf("status = %+v, want started, not done, agent dead", st)
	}
	// Stop still reaches the orphaned run phase.
	if err := node.StopWithin(context.Background(), r, time.Second); err != nil {
		t.Fatal(err)
	}
	if groupAlive(t, groups[1]) {
		t.Errorf("run group %d alive after Stop", groups[1])
	}
}

// A stop that comes after the task ended on its own (a controller killed
// between stopping the nodes and recording the end, then reading them
// again) never hides the task's own exit code.
func TestStopAfterDoneIsNotTheTasksEnd(t *testing.T) {
	r := newNode(t)
	if err := node.Start(context.Background(), r, node.StartSpec{Run: "exit 29"}); err != nil {
		t.Fatal(err)
	}
	waitDone(t, r)
	if err := node.Stop(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, r); st.ExitCode != 29 || st.Stopped || !st.StopAsked {
		t.Errorf("status after a late Stop = %+v, want the task's own 29, not stopped, the stop asked", st)
	}
}
