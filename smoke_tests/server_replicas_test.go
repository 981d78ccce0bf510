package smoke_tests

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/controller/store/pgtest"
)

// Two `sortie server --replica` processes on one PostgreSQL store and one
// home: jobs launched through either API are driven by one replica or the
// other, every job ends SUCCEEDED, and `sortie server status` lists both
// servers as live replicas.
func TestServersAsReplicasOnPostgres(t *testing.T) {
	pg, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	url := pg.NewDatabase(t)

	e := newEnv(t, "SORTIE_STORE="+url)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.yaml"), []byte(simConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	s1 := startServerIn(t, e, "--store", url, "--replica", "r1", "--lease-ttl", "3s")
	s2 := startServerIn(t, e, "--store", url, "--replica", "r2", "--lease-ttl", "3s")
	alice1, tok := s1.user("alice", false)
	// The same user through the other server.
	root := t.TempDir()
	alice2 := newEnv(t, "SORTIE_API_URL="+s2.url, "SORTIE_TOKEN="+tok, "HOME="+root, "XDG_CONFIG_HOME="+filepath.Join(root, ".config"))
	var ids []int64
	for i := 0; i < 6; i++ {
		u := alice1
		if i%2 == 1 {
			u = alice2
		}
		ids = append(ids, u.launch(u.write("sim.yaml", simRestart)))
	}
	for _, id := range ids {
		alice1.waitStatus(id, lifecycle.Succeeded)
	}
	var rs []struct {
		Name string `json:"name"`
		Live bool   `json:"live"`
	}
	r := e.must("server", "status", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rs); err != nil {
		t.Fatalf("server status -o json: %v\n%s", err, r.stdout)
	}
	live := map[string]bool{}
	for _, x := range rs {
		live[x.Name] = x.Live
	}
	if !live["r1"] || !live["r2"] {
		t.Fatalf("server status: %s; want r1 and r2 live", r.stdout)
	}
}
