package store

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/lifecycle"
	"sortie/strategy"
	"sortie/strategy/clocktest"
)

func openLeaseTest(t *testing.T, b backend) (*Store, *clocktest.Clock) {
	t.Helper()
	clk := clocktest.New(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	s, err := OpenURL(context.Background(), b.newStore(t), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, clk
}

func newJobs(t *testing.T, s *Store, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		id, err := s.CreateJob(context.Background(), &Job{Name: "j", Spec: []byte(`{}`)}, []NewTask{{Name: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func register(t *testing.T, s *Store, id, name string) {
	t.Helper()
	if err := s.RegisterReplica(context.Background(), Replica{ID: id, Name: name, Host: "h", PID: 7, TTL: ttl}); err != nil {
		t.Fatal(err)
	}
}

const ttl = 10 * time.Second

func jobsOf(ls []Lease) []int64 {
	out := make([]int64, len(ls))
	for i, l := range ls {
		out[i] = l.Job
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func TestClaimRenewExpire(t *testing.T) { onEach(t, testClaimRenewExpire) }

func testClaimRenewExpire(t *testing.T, b backend) {
	ctx := context.Background()
	s, clk := openLeaseTest(t, b)
	ids := newJobs(t, s, 5)
	register(t, s, "a1", "a")
	register(t, s, "b1", "b")

	got, err := s.ClaimJobs(ctx, "a1", 3, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids[:3], jobsOf(got)); diff != "" {
		t.Fatalf("a's claim (-want +got):\n%s", diff)
	}
	// b gets only what a does not hold, however many it asks for.
	got, err = s.ClaimJobs(ctx, "b1", 10, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids[3:], jobsOf(got)); diff != "" {
		t.Fatalf("b's claim (-want +got):\n%s", diff)
	}
	if got, _ := s.ClaimJobs(ctx, "b1", 10, ttl); len(got) != 0 {
		t.Fatalf("a claim with every lease held took %v", got)
	}
	// a renews within its TTL; b does not, and its leases expire.
	clk.Advance(ttl - time.Second)
	if got, err := s.RenewLeases(ctx, "a1", ttl); err != nil || len(got) != 3 {
		t.Fatalf("a's renew: %v, %v", got, err)
	}
	clk.Advance(2 * time.Second)
	load, err := s.LeaseLoad(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (LeaseLoad{Active: 5, Claimable: 2, Held: 3, Live: 1}); load != want {
		t.Fatalf("load after b's leases expired: got %+v, want %+v", load, want)
	}
	got, err = s.ClaimJobs(ctx, "a1", 10, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids[3:], jobsOf(got)); diff != "" {
		t.Fatalf("a's takeover (-want +got):\n%s", diff)
	}
	for _, l := range got {
		if l.Gen != 2 {
			t.Errorf("job %d taken over at generation %d, want 2", l.Job, l.Gen)
		}
	}
	// b's renew says it holds nothing any more.
	if got, err := s.RenewLeases(ctx, "b1", ttl); err != nil || len(got) != 0 {
		t.Fatalf("b's renew after the takeover: %v, %v", got, err)
	}
	rs, err := s.Replicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int{}
	for _, r := range rs {
		held[r.Name] = r.Jobs
	}
	if diff := cmp.Diff(map[string]int{"a": 5, "b": 0}, held); diff != "" {
		t.Errorf("jobs per replica (-want +got):\n%s", diff)
	}
	// A graceful stop frees a's jobs at once.
	if err := s.ReleaseLeases(ctx, "a1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ClaimJobs(ctx, "b1", 10, ttl); len(got) != 5 {
		t.Fatalf("b's claim after a stopped: %v", got)
	}
	rs, _ = s.Replicas(ctx)
	if len(rs) != 1 || rs[0].Name != "b" || rs[0].Jobs != 5 || rs[0].TTL != ttl {
		t.Fatalf("replicas after a stopped: %+v", rs)
	}
	// b is live until its heartbeat is older than its TTL.
	if live, err := s.LiveReplicas(ctx); err != nil || len(live) != 1 || live[0] != "b" {
		t.Fatalf("live replicas: %v %v", live, err)
	}
	clk.Advance(ttl + time.Second)
	if live, err := s.LiveReplicas(ctx); err != nil || len(live) != 0 {
		t.Fatalf("live replicas after b's TTL: %v %v", live, err)
	}
}

func TestClaimSkipsEndedJobs(t *testing.T) { onEach(t, testClaimSkipsEndedJobs) }

func testClaimSkipsEndedJobs(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openLeaseTest(t, b)
	ids := newJobs(t, s, 2)
	if err := s.FinishJob(ctx, ids[0], strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "cancelled"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimJobs(ctx, "a1", 10, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ids[1:], jobsOf(got)); diff != "" {
		t.Fatalf("claim (-want +got):\n%s", diff)
	}
}

func TestRegisterRefusesALiveName(t *testing.T) { onEach(t, testRegisterRefusesALiveName) }

func testRegisterRefusesALiveName(t *testing.T, b backend) {
	ctx := context.Background()
	s, clk := openLeaseTest(t, b)
	register(t, s, "a1", "a")
	err := s.RegisterReplica(ctx, Replica{ID: "a2", Name: "a", Host: "h", PID: 8, TTL: ttl})
	if !errors.Is(err, ErrReplicaRunning) || !strings.Contains(err.Error(), `replica "a" is pid 7 on h`) {
		t.Fatalf("second live replica named a: got %v", err)
	}
	// Once the first one's heartbeat is older than the TTL it is dead: the
	// name is free, and its row goes.
	clk.Advance(ttl + time.Second)
	if err := s.RegisterReplica(ctx, Replica{ID: "a2", Name: "a", Host: "h", PID: 8, TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	rs, _ := s.Replicas(ctx)
	if len(rs) != 1 || rs[0].ID != "a2" || rs[0].PID != 8 {
		t.Fatalf("replicas: %+v", rs)
	}
}

// A replica whose lease another replica took (it was paused past the TTL)
// can no longer change the job: not end its attempt, not start a launch,
// not record a launch, not finish the job. The new holder can.
func TestFencedWritesFailAfterTheLeaseIsTaken(t *testing.T) {
	onEach(t, testFencedWritesFailAfterTheLeaseIsTaken)
}

func testFencedWritesFailAfterTheLeaseIsTaken(t *testing.T, b backend) {
	ctx := context.Background()
	s, clk := openLeaseTest(t, b)
	ids := newJobs(t, s, 2)
	register(t, s, "a1", "a")
	register(t, s, "b1", "b")
	got, err := s.ClaimJobs(ctx, "a1", 2, ttl)
	if err != nil || len(got) != 2 {
		t.Fatalf("a's claim: %v %v", got, err)
	}
	leaseOf := map[int64]Lease{}
	for _, l := range got {
		leaseOf[l.Job] = l
	}
	run, idle := ids[0], ids[1]
	sa := s.Fenced(Fence{Holder: "a1", Lease: leaseOf[run]})
	a, err := sa.NewAttempt(ctx, run, 0, clusterName(run, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatalf("a's write under its lease: %v", err)
	}
	if err := sa.MarkLaunched(ctx, a.ID, "sim", "r", "z", []string{"i"}); err != nil {
		t.Fatal(err)
	}
	if err := sa.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}

	// a is paused past its TTL; b takes both jobs.
	clk.Advance(ttl + time.Second)
	taken, err := s.ClaimJobs(ctx, "b1", 2, ttl)
	if err != nil || len(taken) != 2 {
		t.Fatalf("b's takeover: %v %v", taken, err)
	}
	ok := Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0)}, Reason: "exit 0"}
	done := strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "succeeded"}
	lost := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s by the replica that lost the lease: got %v, want ErrLeaseLost", what, err)
		}
	}
	lost("end the attempt", sa.EndAttempt(ctx, a, ok, done, Facts{}))
	lost("set the status reason", sa.SetStatusReason(ctx, run, "waiting"))
	lost("record a notice", func() error {
		_, err := sa.RecordNotice(ctx, a, Notice{Kind: "preempted", Source: "sim", At: clk.Now()})
		return err
	}())
	si := s.Fenced(Fence{Holder: "a1", Lease: leaseOf[idle]})
	_, err = si.NewAttempt(ctx, idle, 0, clusterName(idle, 0), nil, lifecycle.Starting)
	lost("start a launch", err)
	lost("finish the job", si.FinishJob(ctx, idle, strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "x"}))

	// Nothing a wrote after losing the lease is there.
	as, _ := s.Attempts(ctx, run)
	if len(as) != 1 || as[0].State != lifecycle.AttemptRunning || as[0].Notice != nil {
		t.Fatalf("attempts of the running job: %+v", as)
	}
	if as, _ := s.Attempts(ctx, idle); len(as) != 0 {
		t.Fatalf("attempts of the idle job: %+v", as)
	}
	if j, _ := s.Job(ctx, idle); j.Status != lifecycle.Pending {
		t.Fatalf("idle job: %s", j.Status)
	}

	// The new holder ends the attempt, once.
	gen := map[int64]Lease{}
	for _, l := range taken {
		gen[l.Job] = l
	}
	if err := s.Fenced(Fence{Holder: "b1", Lease: gen[run]}).EndAttempt(ctx, a, ok, done, Facts{}); err != nil {
		t.Fatalf("the new holder's end: %v", err)
	}
	// The same replica with its old generation is fenced too: a claim it
	// made again after losing the lease is a new generation.
	clk.Advance(ttl + time.Second)
	again, err := s.ClaimJobs(ctx, "a1", 1, ttl)
	if err != nil || len(again) != 1 || again[0].Job != idle || again[0].Gen != 3 {
		t.Fatalf("a's claim again: %v %v", again, err)
	}
	lost("finish with the old generation", si.FinishJob(ctx, idle, strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "x"}))
	if err := s.Fenced(Fence{Holder: "a1", Lease: again[0]}).FinishJob(ctx, idle, strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "x"}); err != nil {
		t.Fatalf("finish with the new generation: %v", err)
	}
}

func TestHeldJobsAndAttempts(t *testing.T) { onEach(t, testHeldJobsAndAttempts) }

func testHeldJobsAndAttempts(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openLeaseTest(t, b)
	ids := newJobs(t, s, 4)
	if _, err := s.ClaimJobs(ctx, "a1", 2, ttl); err != nil {
		t.Fatal(err)
	}
	bs, err := s.ClaimJobs(ctx, "b1", 2, ttl)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting); err != nil {
			t.Fatal(err)
		}
	}
	js, err := s.HeldJobsShard(ctx, "b1", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, j := range js {
		got = append(got, j.ID)
	}
	if diff := cmp.Diff(jobsOf(bs), got); diff != "" {
		t.Errorf("b's jobs (-want +got):\n%s", diff)
	}
	as, err := s.HeldOpenAttemptsShard(ctx, "b1", 2, int(ids[2]%2))
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].JobID != ids[2] {
		t.Errorf("b's open attempts of job %d's shard: %+v", ids[2], as)
	}
}
