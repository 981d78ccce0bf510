package controller

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
)

// silentNodes is a cloud whose running nodes never answer: a dial waits
// until its context ends. It counts the dials of each rank and how many
// wait at once.
type silentNodes struct {
	*fakeCloud
	mu                  sync.Mutex
	dials               map[int]int
	waiting, mostAtOnce int
}

func (s *silentNodes) Runner(ctx context.Context, _ *provision.Cluster, rank int) (provision.Runner, error) {
	s.mu.Lock()
	s.dials[rank]++
	s.waiting++
	s.mostAtOnce = max(s.mostAtOnce, s.waiting)
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.waiting--
	s.mu.Unlock()
	return nil, ctx.Err()
}

// When the cloud reports a node preempted, the attempt ends without ever
// dialling that node; the live nodes are read at once, each within the
// deadline; and every log not kept is said so beside the kept ones.
func TestEndingNeverDialsGoneNodesAndReadsLiveOnesAtOnce(t *testing.T) {
	ctx := context.Background()
	fake := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	cloud := &silentNodes{fakeCloud: fake, dials: map[int]int{}}
	c := newTestController(t, fake)
	c.Providers = oneCloud{cloud}
	c.LogDeadline = 20 * time.Millisecond
	j, a := runningAttempt(t, c, fake, "run: train\nnum_nodes: 3\n")
	cl := &provision.Cluster{Name: a.Cluster, Nodes: []provision.Node{
		{Rank: 0, State: provision.NodePreempted, Reason: "Server.SpotInstanceTermination"},
		{Rank: 1, State: provision.NodeRunning},
		{Rank: 2, State: provision.NodeRunning},
	}}
	fake.clusters[a.Cluster] = cl
	a.InstanceIDs = []string{"i-0", "i-1", "i-2"}
	snap := snapshot{clusters: map[string]*provision.Cluster{a.Cluster: cl}, failed: map[string]error{}}
	done := make(chan error, 1)
	go func() { done <- c.observe(ctx, j, nil, a, snap) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ending the attempt waits on nodes that never answer")
	}
	if j, _ := c.Store.Job(ctx, j.ID); j.Status != lifecycle.Recovering {
		t.Errorf("job is %s (%s), want RECOVERING", j.Status, j.StatusReason)
	}
	cloud.mu.Lock()
	defer cloud.mu.Unlock()
	if cloud.dials[0] != 0 {
		t.Errorf("the preempted node was dialled %d times, want never", cloud.dials[0])
	}
	if cloud.dials[1] == 0 || cloud.dials[2] == 0 {
		t.Errorf("dials of the live nodes: %v, want each read", cloud.dials)
	}
	if cloud.mostAtOnce < 2 {
		t.Errorf("at most %d node was read at once, want the two live nodes together", cloud.mostAtOnce)
	}
	for rank, want := range []string{
		"node 0 was preempted when the attempt ended (Server.SpotInstanceTermination)",
		"node 1 could not be read when the attempt ended: context deadline exceeded",
		"node 2 could not be read when the attempt ended: context deadline exceeded",
	} {
		b, err := os.ReadFile(home.NodeLogMissing(c.Config.Home, j.ID, 0, a.Attempt, rank))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("node %d: note %q, %v; want %q", rank, b, err, want)
		}
	}
	// The notes lie in the job's directory, none in one of the attempt's.
	ents, err := os.ReadDir(home.JobLogDir(c.Config.Home, j.ID))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := "task-0.attempt-1.node-0.log.missing task-0.attempt-1.node-1.log.missing task-0.attempt-1.node-2.log.missing"; strings.Join(names, " ") != want {
		t.Errorf("the job's log directory holds %v, want %s", names, want)
	}
}

// A log kept by an earlier version in its old place is an earlier copy:
// no note says it was not kept.
func TestALogKeptInTheOldLayoutNeedsNoNote(t *testing.T) {
	fake := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, fake)
	j, a := runningAttempt(t, c, fake, "run: train\n")
	old := home.OldNodeLog(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, 0)
	if err := os.MkdirAll(filepath.Dir(old), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte("kept before\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.logNotKept(j, a, 0, "node 0 was gone")
	if _, err := os.Stat(home.NodeLogMissing(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, 0)); err == nil {
		t.Error("a note says a log kept in the old layout was not kept")
	}
	c.logNotKept(j, a, 1, "node 1 was gone")
	if b, err := os.ReadFile(home.NodeLogMissing(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, 1)); err != nil || string(b) != "node 1 was gone\n" {
		t.Errorf("note of node 1: %q, %v", b, err)
	}
}

// chunkedLog is a node whose log comes in full chunks, then a short one;
// it records the deadline each read was given.
type chunkedLog struct {
	full      int
	deadlines []time.Time
}

func (c *chunkedLog) Exec(ctx context.Context, _ string, _ io.Reader) ([]byte, error) {
	d, ok := ctx.Deadline()
	if !ok {
		return nil, errors.New("a read without a deadline")
	}
	c.deadlines = append(c.deadlines, d)
	if len(c.deadlines) <= c.full {
		return bytes.Repeat([]byte{'x'}, node.MaxLogChunk), nil
	}
	return []byte("end\n"), nil
}
func (c *chunkedLog) Dir() string  { return "/n" }
func (c *chunkedLog) Close() error { return nil }

// The deadline bounds each chunk of a log, not the whole copy: a node
// sending a long log is never cut off for taking longer than one deadline.
func TestKeepLogBoundsEachChunk(t *testing.T) {
	r := &chunkedLog{full: 3}
	path := filepath.Join(t.TempDir(), "node-0.log")
	if err := copyLog(context.Background(), node.AgentTask(r), path, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != int64(3*node.MaxLogChunk+4) {
		t.Fatalf("kept %v, %v; want the whole log", st, err)
	}
	for i := 1; i < len(r.deadlines); i++ {
		if !r.deadlines[i].After(r.deadlines[i-1]) {
			t.Errorf("read %d had the deadline of read %d: one deadline for the whole copy", i, i-1)
		}
	}
}

// A temporary name that an earlier version, stopped half way, left linked
// to a local node's log is removed before the copy, never written through.
func TestACopyNeverWritesThroughAnOldTemporaryName(t *testing.T) {
	d := t.TempDir()
	nodeLog, path := filepath.Join(d, "node-log"), filepath.Join(d, "node-0.log")
	if err := os.WriteFile(nodeLog, []byte("the node's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(nodeLog, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := copyLog(context.Background(), node.AgentTask(&chunkedLog{}), path, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(nodeLog); string(b) != "the node's own\n" {
		t.Errorf("the node's log became %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "end\n" {
		t.Errorf("kept %q, want the log read through the node", b)
	}
	if _, err := os.Lstat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary name is still there: %v", err)
	}
}

// A known failure's log_path is the directory its attempt's logs are kept
// in, the job's, where they lie.
func TestAFailuresLogPathHoldsItsLogs(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	id, err := c.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte(`{"tasks":[{"run":"echo failing; exit 3","resources":{"job_recovery":{"max_restarts_on_errors":0}}}]}`), NumTasks: 1, InputKey: "k-failing"}, make([]store.NewTask, 1))
	if err != nil {
		t.Fatal(err)
	}
	if j := untilEnded(t, id, func() *Controller { return c }); j.Status != lifecycle.Failed {
		t.Fatalf("job %s (%s), want FAILED", j.Status, j.StatusReason)
	}
	f, err := c.Store.KnownFailure(ctx, "k-failing")
	if err != nil || f == nil {
		t.Fatalf("known failure: %+v, %v", f, err)
	}
	if f.LogPath != home.JobLogDir(c.Config.Home, id) {
		t.Errorf("log_path is %s, want the job's log directory %s", f.LogPath, home.JobLogDir(c.Config.Home, id))
	}
	if b, err := os.ReadFile(filepath.Join(f.LogPath, "task-0.attempt-1.node-0.log")); err != nil || string(b) != "failing\n" {
		t.Errorf("the log in log_path holds %q, %v", b, err)
	}
}
