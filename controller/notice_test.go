package controller

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/local"
	"sortie/provision/node"
	"sortie/provision/node/notice"
)

// giveNotice records a notice on a's node 0 as the node's agent does when
// it hears one.
func giveNotice(t *testing.T, c *Controller, a *store.Attempt, n notice.Notice) {
	t.Helper()
	b, _ := json.Marshal(n)
	if err := os.WriteFile(filepath.Join(runners(t, c, a)[0].Dir(), "notice"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// drainNow runs one round of drains and waits for it.
func drainNow(t *testing.T, c *Controller) {
	t.Helper()
	if err := c.drainAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.drains.wg.Wait()
}

func attempts(t *testing.T, c *Controller, id int64) []*store.Attempt {
	t.Helper()
	as, err := c.Store.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// A notice that ends the node starts the replacement at once; the old
// attempt stays open while its task stops, and the new one's task starts
// only after the old one has ended.
func TestNoticeStartsTheReplacementBeforeTheNodeGoes(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	id := createJob(t, c, "run: sleep 300\n")
	a1 := untilRunning(t, c, id)
	now := c.Now()
	giveNotice(t, c, a1, notice.Notice{Kind: notice.KindSpotInterruption, Source: notice.SourceAWS, At: now, Deadline: now.Add(2 * time.Minute)})

	j, _ := step(t, c, id)
	old := attempts(t, c, id)[0]
	if old.ReplacedAt == nil || old.State != lifecycle.AttemptRunning || old.Notice == nil || old.Notice.Kind != notice.KindSpotInterruption ||
		old.Notice.Deadline == nil || !old.Notice.Deadline.Equal(now.Add(2*time.Minute)) {
		t.Fatalf("attempt after the notice: %+v (notice %+v), want it replaced, still running, with its notice", old, old.Notice)
	}
	if j.Status != lifecycle.Recovering || j.RecoveryCount != 1 || !strings.Contains(j.StatusReason, "spot-interruption notice on node 0 from aws-imds") {
		t.Errorf("job after the notice: %s, %d recoveries, reason %q", j.Status, j.RecoveryCount, j.StatusReason)
	}

	// The replacement launches beside the old node, and waits to start.
	for range 5 {
		j, _ = step(t, c, id)
	}
	as := attempts(t, c, id)
	if len(as) != 2 || as[1].State != lifecycle.AttemptStarting || as[0].State != lifecycle.AttemptRunning {
		t.Fatalf("attempts while the old node stops: %v", states(as))
	}
	if !strings.Contains(j.StatusReason, "the task starts once attempt 1's node, under a spot-interruption notice, has stopped") {
		t.Errorf("status reason while waiting: %q", j.StatusReason)
	}
	if st, _ := node.Poll(ctx, runners(t, c, as[1])[0]); st.Started {
		t.Fatal("the replacement's task started while the old one ran")
	}
	drainNow(t, c) // the old task is still running, the deadline far
	if as := attempts(t, c, id); as[0].State != lifecycle.AttemptRunning {
		t.Fatalf("the old attempt ended while its task ran: %+v", as[0])
	}

	// The agent's SIGTERM stops the old task; the drain ends it.
	r := runners(t, c, a1)[0]
	if err := node.StopWithin(ctx, r, time.Second); err != nil {
		t.Fatal(err)
	}
	drainNow(t, c)
	as = attempts(t, c, id)
	if as[0].State != lifecycle.AttemptEnded || as[0].Outcome != "preempted" || as[0].Action != "recover" ||
		as[0].Reason != "the task stopped after the spot-interruption notice" || as[0].EndedAt == nil {
		t.Fatalf("old attempt after the drain: %+v", as[0])
	}
	if _, cl, _ := c.cluster(ctx, as[0]); cl != nil {
		t.Errorf("the old cluster %s is still there", as[0].Cluster)
	}
	a2 := untilRunning(t, c, id)
	if a2.Attempt != 2 {
		t.Fatalf("running attempt %d, want 2", a2.Attempt)
	}
	j, _ = c.Store.Job(ctx, id)
	if j.Status != lifecycle.Running || j.RecoveryCount != 1 {
		t.Errorf("job: %s with %d recoveries, want RUNNING with 1", j.Status, j.RecoveryCount)
	}
}

func states(as []*store.Attempt) []string {
	var out []string
	for _, a := range as {
		out = append(out, string(a.State))
	}
	return out
}

// A node still there after the notice's deadline is not waited for: its
// attempt ends, its task is stopped and its cluster torn down.
func TestNoticeDeadlinePassed(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	id := createJob(t, c, "run: sleep 300\n")
	a1 := untilRunning(t, c, id)
	now := c.Now()
	giveNotice(t, c, a1, notice.Notice{Kind: notice.KindPreempted, Source: notice.SourceGCE, At: now, Deadline: now.Add(30 * time.Second)})
	step(t, c, id)
	r := runners(t, c, a1)[0]
	drainNow(t, c)
	if as := attempts(t, c, id); as[0].State != lifecycle.AttemptRunning {
		t.Fatalf("ended before its deadline: %+v", as[0])
	}
	c.Now = func() time.Time { return now.Add(30*time.Second + noticeSlack + time.Millisecond) }
	drainNow(t, c)
	as := attempts(t, c, id)
	if as[0].State != lifecycle.AttemptEnded || as[0].Outcome != "preempted" || !strings.Contains(as[0].Reason, "deadline (2026-01-01T00:00:30Z) passed") {
		t.Fatalf("after the deadline: %+v", as[0])
	}
	if _, cl, _ := c.cluster(ctx, as[0]); cl != nil {
		t.Errorf("the old cluster %s is still there", as[0].Cluster)
	}
	if st, err := node.Poll(ctx, r); err == nil && st.AgentAlive && !st.Done {
		t.Errorf("the old task still runs: %+v", st)
	}
}

// A rebalance recommendation is recorded and ends nothing; a strategy that
// does not recover leaves the attempt to end as it would, as preempted.
func TestNoticeWithoutReplacement(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, yaml, kind string
		ends             bool
	}{
		{"rebalance", "run: sleep 300\n", notice.KindRebalance, false},
		{"strategy none", "resources: {job_recovery: none}\nrun: sleep 300\n", notice.KindSpotInterruption, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := localController(t)
			id := createJob(t, c, tc.yaml)
			a1 := untilRunning(t, c, id)
			giveNotice(t, c, a1, notice.Notice{Kind: tc.kind, Source: notice.SourceAWS, At: c.Now()})
			j, _ := step(t, c, id)
			a := attempts(t, c, id)[0]
			if a.ReplacedAt != nil || a.State != lifecycle.AttemptRunning || j.Status != lifecycle.Running || a.Notice == nil || a.Notice.Kind != tc.kind {
				t.Fatalf("after a %s notice: job %s, attempt %+v (notice %+v)", tc.kind, j.Status, a, a.Notice)
			}
			if !tc.ends {
				return
			}
			// The agent stops the task; the attempt ends as a preemption.
			if err := node.StopWithin(ctx, runners(t, c, a1)[0], time.Second); err != nil {
				t.Fatal(err)
			}
			j, _ = step(t, c, id)
			a = attempts(t, c, id)[0]
			if a.Outcome != "preempted" || j.Status != lifecycle.Failed {
				t.Errorf("after the stop: outcome %q (%s), job %s; want preempted and FAILED (strategy none)", a.Outcome, a.Reason, j.Status)
			}
		})
	}
}

// A cancel while a replaced attempt drains ends it at once.
func TestNoticeDrainEndsOnCancel(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	id := createJob(t, c, "run: sleep 300\n")
	a1 := untilRunning(t, c, id)
	giveNotice(t, c, a1, notice.Notice{Kind: notice.KindSpotInterruption, Source: notice.SourceAWS, At: c.Now(), Deadline: c.Now().Add(time.Hour)})
	step(t, c, id)
	if _, err := c.Store.RequestCancel(ctx, []int64{id}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		step(t, c, id)
	}
	drainNow(t, c)
	as := attempts(t, c, id)
	j, _ := c.Store.Job(ctx, id)
	if j.Status != lifecycle.Cancelled || as[0].State != lifecycle.AttemptEnded || !strings.Contains(as[0].Reason, "while its node was under a spot-interruption notice") {
		t.Errorf("job %s, old attempt %+v", j.Status, as[0])
	}
}

// A wake after a notice given on local (recorded by the CLI before the
// node's agent has heard it) replaces the attempt at once; its cluster is
// looked at, never taken for gone.
func TestWakeAfterALocalNotice(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	id := createJob(t, c, "run: sleep 300\n")
	a1 := untilRunning(t, c, id)
	deadline := c.Now().Add(30 * time.Second)
	if _, err := c.Store.RecordNotice(ctx, a1, store.Notice{Kind: notice.KindPreempted, Source: notice.SourceLocal, At: c.Now(), Deadline: &deadline}); err != nil {
		t.Fatal(err)
	}
	if err := c.tick(ctx, tickScope{unwatched: true}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	as := attempts(t, c, id)
	if as[0].State != lifecycle.AttemptRunning || as[0].ReplacedAt == nil {
		t.Fatalf("after the wake: %+v, want attempt 1 running and replaced", as[0])
	}
}

// A task that the notice's SIGTERM already stopped when the controller
// looks is replaced all the same, and drained at once; one that ended on
// its own keeps its outcome.
func TestNoticeAfterTheTaskEnded(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, run string
		stop      bool
		replaced  bool
		outcome   string
	}{
		{"stopped by the notice", "sleep 300", true, true, "preempted"},
		{"ended on its own", "exit 0", false, false, "succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := localController(t)
			id := createJob(t, c, "run: "+tc.run+"\n")
			a1 := untilRunning(t, c, id)
			r := runners(t, c, a1)[0]
			if tc.stop {
				if err := node.StopWithin(ctx, r, time.Second); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, r, "the end", done)
			giveNotice(t, c, a1, notice.Notice{Kind: notice.KindSpotInterruption, Source: notice.SourceAWS, At: c.Now(), Deadline: c.Now().Add(2 * time.Minute)})
			step(t, c, id)
			drainNow(t, c)
			a := attempts(t, c, id)[0]
			if (a.ReplacedAt != nil) != tc.replaced || a.Outcome != tc.outcome {
				t.Errorf("attempt: replaced %v, outcome %q (%s); want replaced %v, %q", a.ReplacedAt != nil, a.Outcome, a.Reason, tc.replaced, tc.outcome)
			}
		})
	}
}

// statusFails is a provider whose status calls fail while fail is set.
type statusFails struct {
	provision.Provider
	fail bool
}

func (s *statusFails) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	if s.fail {
		return nil, errors.New("the cloud is unavailable")
	}
	return s.Provider.Status(ctx, names)
}

// A cloud that does not answer keeps a replaced attempt open until its
// notice's deadline has passed, then no longer.
func TestNoticeDrainWhenTheCloudDoesNotAnswer(t *testing.T) {
	c := localController(t)
	sf := &statusFails{Provider: local.New(local.Config{Home: c.Config.Home})}
	c.Providers = oneCloud{sf}
	id := createJob(t, c, "run: sleep 300\n")
	a1 := untilRunning(t, c, id)
	now := c.Now()
	giveNotice(t, c, a1, notice.Notice{Kind: notice.KindSpotInterruption, Source: notice.SourceAWS, At: now, Deadline: now.Add(2 * time.Minute)})
	step(t, c, id)
	sf.fail = true
	drainNow(t, c)
	if a := attempts(t, c, id)[0]; a.State != lifecycle.AttemptRunning {
		t.Fatalf("ended while the cloud did not answer, before the deadline: %+v", a)
	}
	c.Now = func() time.Time { return now.Add(2*time.Minute + noticeSlack + time.Second) }
	drainNow(t, c)
	a := attempts(t, c, id)[0]
	if a.State != lifecycle.AttemptEnded || a.Outcome != "preempted" || !strings.Contains(a.Reason, "the cloud did not answer: ") {
		t.Errorf("after the deadline: %+v", a)
	}
}

// job_recovery.termination_grace reaches the node's agent, which waits that
// long between a notice's SIGTERM and SIGKILL (and says so in the log).
func TestTerminationGraceReachesTheAgent(t *testing.T) {
	c := localController(t)
	id := createJob(t, c, "resources:\n  job_recovery:\n    termination_grace: 7s\nrun: |\n  trap '' TERM\n  sleep 300\n")
	a := untilRunning(t, c, id)
	dir := runners(t, c, a)[0].Dir()
	deadline := time.Now().Add(time.Hour)
	if err := notice.WriteRequest(dir, notice.Request{Deadline: deadline}); err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		if strings.Contains(string(log), "SIGTERM to the task, SIGKILL in 7s") {
			return
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	t.Fatalf("the agent did not give the task a 7s grace; its log: %q", log)
}

// A task's first attempt has no earlier attempt to wait for: its start
// does not ask the store (closed here, so any question would fail), and a
// later attempt does.
func TestFirstAttemptWaitsForNoReplacedOne(t *testing.T) {
	c := newTestController(t, &fakeCloud{clusters: map[string]*provision.Cluster{}})
	ctx := context.Background()
	c.Store.Close()
	if old, err := c.waitForReplaced(ctx, &store.Attempt{JobID: 1, TaskIdx: 0, Attempt: 1}); err != nil || old != nil {
		t.Fatalf("first attempt: waitForReplaced = %v, %v; want nil, nil without a store", old, err)
	}
	if _, err := c.waitForReplaced(ctx, &store.Attempt{JobID: 1, TaskIdx: 0, Attempt: 2}); err == nil {
		t.Fatal("second attempt: waitForReplaced did not ask the (closed) store")
	}
}
