package controller

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/schema"
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
	want := `sortie_quarantined_placements{cloud="local",instance_type="",level="zone",node="",region="local",zone="local-a"} 1`
	if !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s:\n%s", want, rec.Body)
	}
}

// hostCloud is fakeCloud offering local/r/r-a (a task's default cloud),
// whose nodes run on a shared machine, host, as pods do on a Kubernetes
// node; it keeps the specs it was asked for.
type hostCloud struct {
	*fakeCloud
	host  string
	specs []provision.ClusterSpec
}

func (h *hostCloud) Name() string { return "local" }
func (h *hostCloud) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "local", Region: "r", Zone: "r-a"}}, nil
}

func (h *hostCloud) Launch(ctx context.Context, s provision.ClusterSpec) (*provision.Cluster, error) {
	h.specs = append(h.specs, s)
	cl, err := h.fakeCloud.Launch(ctx, s)
	if err == nil {
		cl.Nodes[0].Host = h.host
	}
	return cl, err
}

// loseNodeOn stores a job whose attempt on local/r/r-a, asking for
// instanceType or running on host, lost its node.
func loseNodeOn(t *testing.T, st *store.Store, instanceType, host string, n int) {
	t.Helper()
	ctx := context.Background()
	key := fmt.Sprintf("inputs-%s-%s-%d", instanceType, host, n)
	id, err := st.CreateJob(ctx, &store.Job{Name: "lost", Spec: []byte(`{}`), InputKey: key}, []store.NewTask{{Name: "t", InputKey: key}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.NewAttempt(ctx, id, 0, func(n int) string { return fmt.Sprintf("sortie-lost-%d-%d", id, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetPlacement(ctx, a.ID, "local", "r", "r-a", instanceType, store.Billing{}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkLaunched(ctx, a.ID, "local", "r", "r-a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if host != "" {
		if err := st.SetHost(ctx, a.ID, host); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.NodeLost, Reason: "cluster is gone"},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Rule: strategy.RuleNoRecovery, Reason: "node lost"}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
}

// Three jobs lost their node on one instance type in r-a: the next job
// that may use another type there launches on that one first, its launch
// tries say why, and the attempt records the type it asked for.
func TestQuarantinedInstanceTypeIsTriedLast(t *testing.T) {
	ctx := context.Background()
	cloud := &hostCloud{fakeCloud: &fakeCloud{clusters: map[string]*provision.Cluster{}}}
	c := newTestController(t, cloud.fakeCloud)
	c.Providers = oneCloud{cloud}
	for n := range 3 {
		loseNodeOn(t, c.Store, "big", "", n)
	}
	id := createJob(t, c, "resources:\n  ordered: [{instance_type: big}, {instance_type: small}]\nrun: train\n")
	step(t, c, id)
	if len(cloud.specs) != 1 || cloud.specs[0].Resources.InstanceType != "small" {
		t.Fatalf("launches %+v, want one of small", cloud.specs)
	}
	a, err := c.Store.LastAttempt(ctx, id, 0)
	if err != nil || a.InstanceType != "small" || a.Host != "" {
		t.Fatalf("attempt %+v, %v; want it on small, on no shared host", a, err)
	}
	tries, err := c.Store.LaunchTries(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tries) != 1 || tries[0].Class != strategy.ClassSetAside || tries[0].Zone != "r-a" ||
		!strings.HasPrefix(tries[0].Message, "big in local/r/r-a set aside until ") || !strings.HasSuffix(tries[0].Message, ": 3 jobs lost their node there") {
		t.Fatalf("launch tries %+v, want one saying big is set aside in r-a", tries)
	}
}

// Three jobs lost their node on one Kubernetes node: the next launch in
// that cluster asks to place its pods elsewhere, its launch tries say why,
// and the attempt records the node its pods got.
func TestQuarantinedNodeIsAvoided(t *testing.T) {
	ctx := context.Background()
	cloud := &hostCloud{fakeCloud: &fakeCloud{clusters: map[string]*provision.Cluster{}}, host: "gpu-3"}
	c := newTestController(t, cloud.fakeCloud)
	c.Providers = oneCloud{cloud}
	for n := range 3 {
		loseNodeOn(t, c.Store, "", "gpu-7", n)
	}
	id := createJob(t, c, "run: train\n")
	step(t, c, id)
	if len(cloud.specs) != 1 || !slices.Equal(cloud.specs[0].AvoidHosts, []string{"gpu-7"}) {
		t.Fatalf("launches %+v, want one avoiding gpu-7", cloud.specs)
	}
	a, err := c.Store.LastAttempt(ctx, id, 0)
	if err != nil || a.Host != "gpu-3" {
		t.Fatalf("attempt %+v, %v; want it on gpu-3", a, err)
	}
	tries, err := c.Store.LaunchTries(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tries) != 1 || tries[0].Class != strategy.ClassSetAside || tries[0].Region != "r" || tries[0].Zone != "" ||
		!strings.HasPrefix(tries[0].Message, "node gpu-7 of local/r set aside until ") {
		t.Fatalf("launch tries %+v, want one saying gpu-7 is set aside", tries)
	}
}
