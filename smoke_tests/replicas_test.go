package smoke_tests

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/store/pgtest"
	"sortie/smoke_tests/bench/suite"
)

// Three replicas share one store and one home; 300 sim jobs run, some
// restarting on exit codes and some preempted, while two of the replicas
// are killed with kill -9. Every job ends SUCCEEDED, the survivor holds
// every unfinished job once the dead ones' leases expire, no task is
// started twice (the shared sim counts every start of a task on a node),
// no two attempts of a job are open at once, and no cluster is left.
func TestReplicasSurviveKills(t *testing.T) { replicasSurviveKills(t, "") }

// The same on a PostgreSQL store, as a team runs replicas.
func TestReplicasSurviveKillsOnPostgres(t *testing.T) {
	srv, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	replicasSurviveKills(t, srv.NewDatabase(t))
}

func replicasSurviveKills(t *testing.T, storeURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := newEnv(t)
	// A poll interval of 1.25 s spreads the jobs over 5 shards, ticked
	// every 250 ms beside a claim every second (TTL/3): the claims must
	// not take a shard's turn, or a fifth of the jobs would never be
	// checked.
	o := suite.ReplicasOptions{Bin: e.bin, Home: e.home, Jobs: 300, Replicas: 3, Kill: 2, KillAfter: 0.3,
		RunTime: 3 * time.Second, ExitShare: 0.1, PreemptShare: 0.05, Seed: 3, TTL: 3 * time.Second, Store: storeURL,
		PollInterval: 1250 * time.Millisecond, Timeout: 3 * time.Minute, Progress: progress(t)}
	t.Cleanup(func() { killLeftovers(t, o.Home) })
	var status []contract.ReplicaView
	o.AfterTakeover = func() {
		r := e.must("replicas", "status", "-o", "json")
		if err := json.Unmarshal([]byte(r.stdout), &status); err != nil {
			t.Errorf("replicas status -o json: %v\n%s", err, r.stdout)
		}
	}
	r, err := suite.RunReplicas(ctx, o)
	if err != nil {
		logReplicas(t, o.Home)
		t.Fatal(err)
	}
	if r.Statuses["SUCCEEDED"] != o.Jobs {
		logReplicas(t, o.Home)
		t.Fatalf("statuses %v, want all %d SUCCEEDED", r.Statuses, o.Jobs)
	}
	if r.Orphaned == 0 {
		t.Fatalf("the killed replicas held no unfinished job: the test checked no takeover")
	}
	if r.SurvivorsHeld != r.Unfinished {
		t.Errorf("after the takeover the survivor held %d of %d unfinished jobs", r.SurvivorsHeld, r.Unfinished)
	}
	for _, p := range r.Problems {
		t.Error(p)
	}
	// Each start is counted once its cluster's record holds it: a replica
	// killed between the two leaves a start uncounted (at most one per
	// kill), never one counted twice (Problems names any start that was).
	if r.Starts > r.Attempts || r.Starts < r.Attempts-2 {
		t.Errorf("the sim counted %d task starts for %d attempts of one node each", r.Starts, r.Attempts)
	}
	live := map[string]bool{}
	for _, v := range status {
		live[v.Name] = v.Live
		if v.Name == "r3" && v.Jobs == 0 && r.Unfinished > 0 {
			t.Errorf("replicas status: the survivor holds no job: %+v", v)
		}
	}
	if len(status) != 3 || !live["r3"] || live["r1"] || live["r2"] {
		t.Errorf("replicas status after the takeover: %+v; want r3 live, r1 and r2 dead", status)
	}
	t.Logf("%d jobs, %d attempts; %d orphaned jobs taken over in %s", o.Jobs, r.Attempts, r.Orphaned, r.Takeover.Round(time.Millisecond))
}

func logReplicas(t *testing.T, home string) {
	for _, n := range []string{"r1", "r2", "r3"} {
		if b, err := os.ReadFile(filepath.Join(home, "replica-"+n+".log")); err == nil {
			t.Logf("replica %s log:\n%s", n, tail(string(b), 4000))
		}
	}
}
