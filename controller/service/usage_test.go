package service

import (
	"context"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/strategy"
)

// `server usage`: an admin sees every user; any other user their own row
// alone (made when they have no job), with the server's total and limit;
// the limits are config.yaml's with the quotas.
func TestUsageRowsByAsker(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	four := 4
	s.Config.Limits.Server.RunningJobs = &four
	ask := strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 1, strategy.GPU("A100"): 2}
	var ids []int64
	for _, owner := range []string{"alice", "bob", "bob"} {
		id, err := s.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte(`{}`), Owner: owner, Priority: 500, Ask: store.FormatAsk(ask)}, []store.NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := s.Store.Admit(ctx, time.Time{}, func(store.AdmissionFacts) []strategy.Placed {
		return []strategy.Placed{{ID: ids[0], Admit: true}, {ID: ids[1], Admit: true}}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.SetQuota(ctx, store.Quota{Scope: store.QuotaUser, Name: "bob", Limit: strategy.Amounts{strategy.GPU("A100"): 2}}, "root"); err != nil {
		t.Fatal(err)
	}

	all, err := s.As(&contract.Asker{Name: "root", Admin: true}).Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].User != "alice" || all[1].User != "bob" || all[1].Waiting != 1 || all[1].UserLimit == nil || all[1].UserLimit.GPUs["A100"] != 2 {
		t.Fatalf("the admin's rows: %+v, want alice and bob, bob's quota of 2 A100", all)
	}
	for _, r := range all {
		if *r.ServerHeld.RunningJobs != 2 || r.ServerHeld.GPUs["A100"] != 4 || *r.ServerLimit.RunningJobs != 4 || r.HalfLifeHours != 168 {
			t.Errorf("%s's row: server held %+v limit %+v half-life %v, want 2 jobs and 4 A100 of 4 jobs, 168h", r.User, r.ServerHeld, r.ServerLimit, r.HalfLifeHours)
		}
	}
	mine, err := s.As(&contract.Asker{Name: "alice"}).Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(mine) != 1 || mine[0].User != "alice" || *mine[0].Held.RunningJobs != 1 || *mine[0].ServerHeld.RunningJobs != 2 {
		t.Fatalf("alice's rows: %+v, want hers alone, with the server's total", mine)
	}
	none, err := s.As(&contract.Asker{Name: "carol"}).Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(none) != 1 || none[0].User != "carol" || *none[0].Held.RunningJobs != 0 || none[0].Weight != 1 || *none[0].ServerHeld.RunningJobs != 2 {
		t.Fatalf("carol's rows: %+v, want her own, empty, with the server's total", none)
	}
}
