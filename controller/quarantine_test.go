package controller

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// loseNodeAt stores a job whose attempt on local/local/zone lost its node.
func loseNodeAt(t *testing.T, st *store.Store, zone string, n int) int64 {
	t.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("inputs-%d", n)
	id, err := st.CreateJob(ctx, &store.Job{Name: "lost", Spec: []byte(`{}`), InputKey: key}, []store.NewTask{{Name: "t", InputKey: key}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.NewAttempt(ctx, id, 0, func(n int) string { return fmt.Sprintf("sortie-lost-%d-%d", id, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkLaunched(ctx, a.ID, "local", "local", zone, []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.NodeLost, Reason: "cluster is gone"},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Rule: strategy.RuleNoRecovery, Reason: "node lost"}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
	return id
}

// Three jobs lost their node on local-a: the next job's launch tries local-b
// first, and its launch tries say why.
func TestQuarantinedZoneIsTriedLast(t *testing.T) {
	ctx := context.Background()
	c := localController(t)
	for n := range 3 {
		loseNodeAt(t, c.Store, "local-a", n)
	}
	id := createJob(t, c, "resources: {cloud: local}\nrun: echo ok\n")
	_, a := step(t, c, id)
	if a == nil || a.Zone != "local-b" {
		t.Fatalf("attempt %+v, want it launched on local-b", a)
	}
	tries, err := c.Store.LaunchTries(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tries) != 1 || tries[0].Class != strategy.ClassSetAside || tries[0].Zone != "local-a" ||
		!strings.HasPrefix(tries[0].Message, "local/local/local-a set aside until ") ||
		!strings.HasSuffix(tries[0].Message, ": 3 jobs lost their node there") {
		t.Fatalf("launch tries %+v, want one saying local-a is set aside", tries)
	}
}

// A job pinned to the quarantined zone still launches there: quarantine
// orders placements, it never removes one.
func TestOnlyAQuarantinedZoneIsStillTried(t *testing.T) {
	c := localController(t)
	for n := range 3 {
		loseNodeAt(t, c.Store, "local-a", n)
	}
	id := createJob(t, c, "resources: {cloud: local, zone: local-a}\nrun: echo ok\n")
	_, a := step(t, c, id)
	if a == nil || a.Zone != "local-a" || a.State == lifecycle.AttemptLaunching {
		t.Fatalf("attempt %+v, want it launched on local-a", a)
	}
}

// With quarantine off, the zone is tried in the strategy's order.
func TestQuarantineOffKeepsTheOrder(t *testing.T) {
	c := localControllerWith(t, "quarantine:\n  off: true\n")
	for n := range 3 {
		loseNodeAt(t, c.Store, "local-a", n)
	}
	id := createJob(t, c, "resources: {cloud: local}\nrun: echo ok\n")
	if _, a := step(t, c, id); a == nil || a.Zone != "local-a" {
		t.Fatalf("attempt %+v, want it launched on local-a", a)
	}
}

// The controller's metrics show the quarantined placements from its store.
func TestQuarantinedPlacementsAreAGauge(t *testing.T) {
	c := localController(t)
	for n := range 3 {
		loseNodeAt(t, c.Store, "local-a", n)
	}
	rec := httptest.NewRecorder()
	c.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := `sortie_quarantined_placements{cloud="local",region="local",zone="local-a"} 1`
	if !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s:\n%s", want, rec.Body)
	}
}
