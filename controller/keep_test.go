package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	if err := keepLog(context.Background(), node.AgentTask(r), path, time.Hour, 0, os.Link); err != nil {
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

// hereNode is a node whose directory is on this machine (node.LocalDirer),
// its reads answered from there as the local provider answers them.
type hereNode struct{ dir string }

func (r hereNode) Exec(_ context.Context, script string, _ io.Reader) ([]byte, error) {
	if req, ok := node.Decode(script); ok {
		if out, ok := node.AnswerHere(req); ok {
			return out, nil
		}
	}
	return nil, errors.New("hereNode answers reads only")
}
func (r hereNode) Dir() string      { return r.dir }
func (r hereNode) LocalDir() string { return r.dir }
func (r hereNode) Close() error     { return nil }

// hereLog makes attempt 1's log on a node of this machine, holding text
// (written with a umask that lets others read it, as a task's may), and
// returns the node's task and the log's path.
func hereLog(t *testing.T, text string) (node.Task, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "attempt-1", "log")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(log, 0o644); err != nil {
		t.Fatal(err)
	}
	return node.AgentTask(node.ForAttempt(hereNode{dir}, 1)), log
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

// A local node's log is kept by a hard link: the kept file is the node's
// log itself, private like the rest of the home, no temporary name is
// left, and it outlives the node's directory.
func TestALocalLogIsKeptByALink(t *testing.T) {
	nt, log := hereLog(t, "hello\n")
	path := filepath.Join(t.TempDir(), "task-0.attempt-1.node-0.log")
	if err := keepLog(context.Background(), nt, path, time.Minute, 1<<20, os.Link); err != nil {
		t.Fatal(err)
	}
	if !sameFile(t, log, path) {
		t.Fatal("the kept log is a copy, want the node's log linked")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != home.FileMode {
		t.Errorf("kept log is %v, want %v", fi.Mode().Perm(), home.FileMode)
	}
	if _, err := os.Lstat(path + ".tmp"); err == nil {
		t.Error("a temporary name was left beside the kept log")
	}
	// Kept again (after a stop): still the same file, nothing made.
	if err := keepLog(context.Background(), nt, path, time.Minute, 1<<20, func(string, string) error {
		t.Error("linked again a log kept by a link")
		return errors.New("no")
	}); err != nil || !sameFile(t, log, path) {
		t.Errorf("kept again: %v, or no longer the node's log", err)
	}
	if err := os.RemoveAll(filepath.Dir(filepath.Dir(log))); err != nil { // the cluster torn down
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello\n" {
		t.Errorf("after the teardown the kept log holds %q, %v", b, err)
	}
}

// A log over the attempt's cap is copied, capped, as any other: a link
// would keep it whole.
func TestALocalLogOverTheCapIsCopied(t *testing.T) {
	nt, log := hereLog(t, strings.Repeat("x", 300)+"\n")
	path := filepath.Join(t.TempDir(), "node.log")
	if err := keepLog(context.Background(), nt, path, time.Minute, 100, func(string, string) error {
		t.Error("a log over the cap was linked")
		return errors.New("no")
	}); err != nil {
		t.Fatal(err)
	}
	if sameFile(t, log, path) {
		t.Fatal("a log over the cap is the node's log")
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "bytes of this log dropped here") || len(b) > 300 {
		t.Errorf("kept %d bytes %q, want the log capped", len(b), b)
	}
	// Linked while under the cap, then grown past it (a task still
	// running): kept again, it is copied, capped, over the link.
	nt, log = hereLog(t, "short\n")
	if err := keepLog(context.Background(), nt, path, time.Minute, 100, os.Link); err != nil || !sameFile(t, log, path) {
		t.Fatalf("kept %v, or not linked", err)
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat("y", 300) + "\n")
	f.Close()
	if err := keepLog(context.Background(), nt, path, time.Minute, 100, os.Link); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); sameFile(t, log, path) || !strings.Contains(string(b), "bytes of this log dropped here") {
		t.Errorf("a linked log grown past the cap is kept as %d bytes, linked %v", len(b), sameFile(t, log, path))
	}
}

// A link that fails, across file systems (EXDEV) or otherwise, leaves a
// copy, as a remote node's log is kept.
func TestALocalLogThatCannotBeLinkedIsCopied(t *testing.T) {
	for _, fail := range []error{&os.LinkError{Op: "link", Err: syscall.EXDEV}, errors.New("no links here")} {
		nt, log := hereLog(t, "hello\n")
		path := filepath.Join(t.TempDir(), "node.log")
		tried := 0
		err := keepLog(context.Background(), nt, path, time.Minute, 1<<20, func(string, string) error {
			tried++
			return fail
		})
		if err != nil || tried != 1 {
			t.Fatalf("%v: kept %v after %d links tried, want one and a copy", fail, err, tried)
		}
		if b, _ := os.ReadFile(path); string(b) != "hello\n" || sameFile(t, log, path) {
			t.Errorf("%v: kept %q, linked %v; want a copy", fail, b, sameFile(t, log, path))
		}
	}
}

// The link replaces an earlier copy whole (through a temporary name), never
// removing it first; a temporary name left linked to the node's log by a
// controller that stopped half way is removed, never written through.
func TestALinkReplacesAnEarlierCopy(t *testing.T) {
	nt, log := hereLog(t, "whole log\n")
	path := filepath.Join(t.TempDir(), "node.log")
	if err := os.WriteFile(path, []byte("earlier\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := keepLog(context.Background(), nt, path, time.Minute, 1<<20, os.Link); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "whole log\n" || !sameFile(t, log, path) {
		t.Errorf("kept %q, linked %v; want the node's log linked over the copy", b, sameFile(t, log, path))
	}
	if _, err := os.Lstat(path + ".tmp"); err == nil {
		t.Error("the temporary name is left")
	}
	// A temporary name linked to the node's log gives it a second name:
	// it is copied, the stale name removed rather than truncated.
	path = filepath.Join(t.TempDir(), "node.log")
	if err := os.Link(log, path+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := keepLog(context.Background(), nt, path, time.Minute, 1<<20, os.Link); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(log); string(b) != "whole log\n" {
		t.Errorf("the node's log holds %q after a copy, want it untouched", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "whole log\n" {
		t.Errorf("kept %q", b)
	}
	if _, err := os.Lstat(path + ".tmp"); err == nil {
		t.Error("the temporary name is left")
	}
}

// A node's log that is not a plain file of the node's alone (a symlink,
// or a file with another name too) is copied: what it holds is kept, the
// file it names is never shared or made private.
func TestALocalLogOfOtherNamesIsCopied(t *testing.T) {
	nt, log := hereLog(t, "")
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte("someone's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mk := range []func() error{
		func() error { return os.Symlink(other, log) },
		func() error { return os.Link(other, log) },
	} {
		os.Remove(log)
		if err := mk(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "node.log")
		if err := keepLog(context.Background(), nt, path, time.Minute, 1<<20, os.Link); err != nil {
			t.Fatal(err)
		}
		if sameFile(t, other, path) {
			t.Error("the kept log is another file's name")
		}
		if fi, _ := os.Stat(other); fi.Mode().Perm() != 0o644 {
			t.Errorf("the other file was made %v", fi.Mode().Perm())
		}
	}
}

// On the local provider an attempt's kept log is the node's log itself: the
// inode the task saw as its log is the kept file's, and it stays when the
// cluster is torn down.
func TestALocalAttemptKeepsItsLogByALink(t *testing.T) {
	c := localController(t)
	id := createJob(t, c, "run: stat -c 'inode %i' \"$SORTIE_NODE_DIR/log\"\n")
	a := untilRunning(t, c, id)
	r := runners(t, c, a)[0]
	waitFor(t, r, "the end", done)
	nodeDir := r.Dir()
	var j *store.Job
	for range 10 {
		if j, _ = step(t, c, id); j.Status.Terminal() {
			break
		}
	}
	if j.Status != lifecycle.Succeeded {
		t.Fatalf("job %s (%s), want SUCCEEDED", j.Status, j.StatusReason)
	}
	if _, err := os.Stat(nodeDir); !os.IsNotExist(err) {
		t.Fatalf("the node's directory is still there (%v): the cluster was not torn down", err)
	}
	path := home.NodeLog(c.Config.Home, id, 0, a.Attempt, 0)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if want := fmt.Sprintf("inode %d\n", st.Ino); string(b) != want {
		t.Errorf("the kept log holds %q, want %q: the node's own log file", b, want)
	}
	if st.Nlink != 1 || fi.Mode().Perm() != home.FileMode {
		t.Errorf("the kept log has %d names and mode %v, want the kept one alone and %v", st.Nlink, fi.Mode().Perm(), home.FileMode)
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
