package store

import (
	"context"
	"math"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

func TestCostsAddUpThroughRecoveries(t *testing.T) { onEach(t, testCostsAddUpThroughRecoveries) }

// An attempt's billing is shown on its job while its cluster is up; its
// cost is added to the job's when it ends; a restart on the same cluster
// is billed from the end of the attempt before, with no minimum.
func testCostsAddUpThroughRecoveries(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	id, err := s.CreateJob(ctx, &Job{Name: "train", Spec: []byte(`{}`)}, []NewTask{{Name: "t0"}})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := s.Job(ctx, id)
	if c := j.CostAt(time.Now()); c != nil {
		t.Fatalf("a new job costs %+v, want unknown", c)
	}
	a1, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	price := 0.5
	bill := Billing{From: &from, InstanceType: "m6i.large", Spot: true, Nodes: 2, Minimum: time.Minute, PerHour: &price}
	if err := s.SetPlacement(ctx, a1.ID, "", "", "", "", bill); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Job(ctx, id)
	if j.CostSince != nil {
		t.Fatalf("billing shown before the cluster is up: %+v", j)
	}
	if err := s.MarkLaunched(ctx, a1.ID, "aws", "us-east-1", "us-east-1a", []string{"i-1", "i-2"}); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Job(ctx, id)
	c := j.CostAt(from.Add(30 * time.Minute))
	if c == nil || math.Abs(c.Dollars-0.5) > 1e-9 || !c.Estimate {
		t.Fatalf("running half an hour on 2 nodes at $0.50: %+v, want ~$0.50", c)
	}
	as, _ := s.Attempts(ctx, id)
	if got := as[0].Billing; got.InstanceType != "m6i.large" || !got.Spot || got.Nodes != 2 || got.Minimum != time.Minute ||
		got.PerHour == nil || *got.PerHour != 0.5 || got.From == nil || !got.From.Equal(from) {
		t.Fatalf("billing read back: %+v", got)
	}
	a1 = as[0]
	if err := s.MarkRunning(ctx, a1); err != nil {
		t.Fatal(err)
	}
	restart := strategy.Decision{Action: strategy.Restart, Counters: strategy.Counters{RestartsOnErrors: 1}, Reason: "restart 1/1 on errors"}
	if err := s.EndAttempt(ctx, a1, Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{code(1), code(0)},
		Cost: &Cost{Dollars: 1.25}}, restart, Facts{}); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Job(ctx, id)
	if c := j.CostAt(time.Now()); c == nil || c.Dollars != 1.25 || c.Estimate || j.CostSince != nil {
		t.Fatalf("after the first attempt: %+v (job %+v)", c, j)
	}
	prev, _ := s.LastAttempt(ctx, id, 0)
	a2, err := s.NewAttempt(ctx, id, 0, clusterName(id, 0), prev, lifecycle.Recovering)
	if err != nil {
		t.Fatal(err)
	}
	if a2.Billing.From == nil || !a2.Billing.From.Equal(*prev.EndedAt) || a2.Billing.Minimum != 0 || a2.Billing.Nodes != 2 {
		t.Fatalf("the reused cluster's billing: %+v, want from %v with no minimum", a2.Billing, prev.EndedAt)
	}
	j, _ = s.Job(ctx, id)
	if j.CostSince == nil || !j.CostSince.Equal(*prev.EndedAt) || j.CostRate == nil || *j.CostRate != 1.0 {
		t.Fatalf("the reused cluster's billing on the job: %+v", j)
	}
	if err := s.MarkRunning(ctx, a2); err != nil {
		t.Fatal(err)
	}
	// A cost not known (no price) makes the sum an estimate.
	if err := s.EndAttempt(ctx, a2, Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{code(0), code(0)}},
		strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "done"}, Facts{}); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Job(ctx, id)
	if c := j.CostAt(time.Now()); c == nil || c.Dollars != 1.25 || !c.Estimate {
		t.Fatalf("after an attempt of unknown cost: %+v, want ~$1.25", c)
	}
	as, _ = s.Attempts(ctx, id)
	if as[0].Cost == nil || as[0].Cost.Dollars != 1.25 || as[1].Cost != nil {
		t.Fatalf("attempts' costs: %+v, %+v", as[0].Cost, as[1].Cost)
	}
}
