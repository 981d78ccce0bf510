package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/strategy"
)

// Quotas are stored per scope, replace one another, are logged as
// actions, and admission reads them in its own transaction.
func TestQuotas(t *testing.T) { onEach(t, testQuotas) }

func testQuotas(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	if any, err := s.HasQuotas(ctx); err != nil || any {
		t.Fatalf("a new store has quotas: %v %v", any, err)
	}
	a100 := strategy.GPU("A100")
	for _, q := range []Quota{
		{Scope: QuotaGroup, Name: "ml", Members: []string{"alice", "bob"}, Limit: strategy.Amounts{strategy.VCPUs: 512}},
		{Scope: QuotaUser, Name: "alice", Limit: strategy.Amounts{a100: 8}},
		{Scope: QuotaServer, Limit: strategy.Amounts{strategy.Jobs: 20}},
		{Scope: QuotaServer, Limit: strategy.Amounts{strategy.Jobs: 10, a100: 64}}, // replaces the one before
		{Scope: QuotaPerUser},
	} {
		if _, err := s.SetQuota(ctx, q, "root"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetQuota(ctx, Quota{Scope: "team", Name: "x"}, "root"); err == nil || !strings.Contains(err.Error(), `"team"`) {
		t.Errorf("an unknown scope: %v", err)
	}
	if _, err := s.SetQuota(ctx, Quota{Scope: QuotaUser}, "root"); err == nil {
		t.Error("a user quota without a name was stored")
	}
	qs, err := s.Quotas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range qs {
		if q.SetBy != "root" || q.SetAt.IsZero() {
			t.Errorf("%s set by %q at %v", q.Key(), q.SetBy, q.SetAt)
		}
		got = append(got, fmt.Sprintf("%s %s %v", q.Key(), FormatAsk(q.Limit), q.Members))
	}
	want := []string{`server {"gpu:A100":64,"jobs":10} []`, `per_user {} []`, `user alice {"gpu:A100":8} []`,
		`group ml {"vcpus":512} [alice bob]`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("quotas (-want +got):\n%s", diff)
	}

	// Admission's facts carry them, read in its transaction.
	f, err := s.AdmissionFacts(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Quotas) != 4 {
		t.Errorf("admission read %d quotas, want 4", len(f.Quotas))
	}

	ok, err := s.UnsetQuota(ctx, QuotaUser, "alice", "root")
	if err != nil || !ok {
		t.Fatalf("unset alice: %v %v", ok, err)
	}
	if ok, err := s.UnsetQuota(ctx, QuotaUser, "alice", "root"); err != nil || ok {
		t.Errorf("unset alice again: %v %v, want nothing to unset", ok, err)
	}
	if qs, _ := s.Quotas(ctx); len(qs) != 3 {
		t.Errorf("%d quotas left, want 3", len(qs))
	}
	acts, err := s.Actions(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for _, a := range acts {
		if a.Verb == "quota" {
			logged = append(logged, a.Actor+": "+a.Detail)
		}
	}
	if want := []string{`root: set group ml {"vcpus":512} members alice,bob`, `root: set user alice {"gpu:A100":8}`,
		`root: set server {"jobs":20}`, `root: set server {"gpu:A100":64,"jobs":10}`, `root: set per_user {}`,
		`root: unset user alice`}; !cmp.Equal(want, logged) {
		t.Errorf("actions (-want +got):\n%s", cmp.Diff(want, logged))
	}
}

// A quota replaces config.yaml's entry of its scope, also with an empty
// limit; groups stay in name order.
func TestApplyQuotas(t *testing.T) {
	a100 := strategy.GPU("A100")
	base := strategy.Limits{
		Server:      strategy.Amounts{strategy.Jobs: 20, a100: 64},
		DefaultUser: strategy.Amounts{strategy.Jobs: 5},
		Users:       map[string]strategy.Amounts{"bob": {a100: 4}},
		Groups:      []strategy.Group{{Name: "b", Members: []string{"x"}, Limit: strategy.Amounts{strategy.Nodes: 3}}},
	}
	got := ApplyQuotas(base, []Quota{
		{Scope: QuotaServer, Limit: strategy.Amounts{strategy.Jobs: 10}},
		{Scope: QuotaUser, Name: "alice", Limit: strategy.Amounts{a100: 16}},
		{Scope: QuotaUser, Name: "bob"},
		{Scope: QuotaGroup, Name: "a", Members: []string{"alice"}, Limit: strategy.Amounts{strategy.VCPUs: 8}},
		{Scope: QuotaGroup, Name: "b", Members: []string{"y"}, Limit: strategy.Amounts{strategy.Nodes: 1}},
	})
	want := strategy.Limits{
		Server:      strategy.Amounts{strategy.Jobs: 10},
		DefaultUser: strategy.Amounts{strategy.Jobs: 5},
		Users:       map[string]strategy.Amounts{"alice": {a100: 16}, "bob": {}},
		Groups: []strategy.Group{{Name: "a", Members: []string{"alice"}, Limit: strategy.Amounts{strategy.VCPUs: 8}},
			{Name: "b", Members: []string{"y"}, Limit: strategy.Amounts{strategy.Nodes: 1}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	// base is not changed.
	if base.Users["bob"][a100] != 4 || base.Groups[0].Members[0] != "x" || len(base.Users) != 1 {
		t.Errorf("base changed: %+v", base)
	}
	if !LimitsAny(got) || LimitsAny(ApplyQuotas(strategy.Limits{}, []Quota{{Scope: QuotaServer}})) {
		t.Error("LimitsAny")
	}
}

// What a job holds of a dollar limit: its ask's estimate until its
// attempt bills, then what it costs an hour (cost_rate).
func TestHeldHourlyCost(t *testing.T) { onEach(t, testHeldHourlyCost) }

func testHeldHourlyCost(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	var ids []int64
	for range 2 {
		id, err := s.CreateJob(ctx, &Job{Name: "j", Spec: []byte(`{}`), Owner: "alice", Priority: 500,
			Ask: FormatAsk(strategy.Amounts{strategy.Jobs: 1, strategy.HourlyCost: 300})}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := s.Admit(ctx, time.Time{}, func(AdmissionFacts) []strategy.Placed {
		return []strategy.Placed{{ID: ids[0], Admit: true}, {ID: ids[1], Admit: true}}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE jobs SET cost_rate = ?, cost_since = ? WHERE id = ?`, 12.345, fmtTime(s.now()), ids[0]); err != nil {
		t.Fatal(err)
	}
	f, err := s.AdmissionFacts(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Held["alice"][strategy.HourlyCost]; got != 1235+300 {
		t.Errorf("alice holds %d cents an hour, want 1235 (billing) + 300 (asked)", got)
	}
}
