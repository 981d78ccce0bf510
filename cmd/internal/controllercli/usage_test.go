package controllercli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/strategy"
)

// `server usage` reads the server's store and config.yaml: a user with a
// job holding GPUs and one with jobs waiting, each against their limit,
// in a table and as JSON.
func TestServerUsage(t *testing.T) {
	ctx := context.Background()
	h := t.TempDir()
	if err := os.WriteFile(filepath.Join(h, "config.yaml"), []byte(
		"limits:\n  server: {running_jobs: 20, gpus: {A100: 64}}\n  per_user: {gpus: {A100: 16}}\n  users:\n    alice: {running_jobs: 5}\n"+
			"fair_share:\n  weights: {bob: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(h, "usage.db")
	st, err := store.OpenURL(ctx, dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ask := strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 1, strategy.VCPUs: 8, strategy.GPU("A100"): 8}
	var ids []int64
	for _, owner := range []string{"alice", "bob", "bob"} {
		id, err := st.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte(`{}`), Owner: owner, Priority: 500, Ask: store.FormatAsk(ask)}, []store.NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if _, err := st.Admit(ctx, time.Time{}, func(store.AdmissionFacts) []strategy.Placed {
		return []strategy.Placed{{ID: ids[0], Admit: true}}
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	run := func(args ...string) string {
		var out bytes.Buffer
		path := dbPath
		cmd := usageCmd(h, &out, &path)
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("usage %v: %v", args, err)
		}
		return out.String()
	}
	var rows []contract.UsageView
	if err := json.Unmarshal([]byte(run("-o", "json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].User != "alice" || rows[1].User != "bob" {
		t.Fatalf("rows %+v, want alice and bob", rows)
	}
	a, b := rows[0], rows[1]
	if *a.Held.RunningJobs != 1 || a.Held.GPUs["A100"] != 8 || a.UserLimit == nil || *a.UserLimit.RunningJobs != 5 || a.UserLimit.GPUs["A100"] != 0 ||
		a.ServerLimit == nil || a.ServerLimit.GPUs["A100"] != 64 || a.Waiting != 0 || a.Weight != 1 {
		t.Errorf("alice: %+v, want 1 job and 8 A100 held, her own limit of 5 jobs", a)
	}
	if *b.Held.RunningJobs != 0 || b.UserLimit == nil || b.UserLimit.GPUs["A100"] != 16 || b.UserLimit.RunningJobs != nil || b.Waiting != 2 || b.Weight != 2 {
		t.Errorf("bob: %+v, want nothing held, the default limit of 16 A100, 2 waiting, weight 2", b)
	}
	table := run()
	for _, want := range []string{
		"Server: 1/20 running jobs, 1 nodes, 8 vCPUs, GPUs A100 8/64, $0.00 an hour (held/limit); use decays with a half-life of 168h0m0s",
		"USER   JOBS  NODES  VCPUS  GPUS       $/HOUR  WEIGHT  USE (h)  SHARE  WAITING",
		"alice  1/5   1      8      A100 8     $0.00   1       0.0      0.0%   0",
		"bob    0     0      0      A100 0/16  $0.00   2       0.0      0.0%   2",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table:\n%s\nwant the line %q", table, want)
		}
	}
}
