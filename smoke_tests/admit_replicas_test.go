package smoke_tests

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	sortiehome "sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/service"
	"sortie/controller/store/pgtest"
	"sortie/smoke_tests/bench/suite"
)

// Three replicas (`sortie-controller run --replica`) on one PostgreSQL
// store admit jobs at once under a server limit of 5 running jobs and a
// limit of 2 per user, while three users submit 60 sim jobs, one every
// 40ms, and an admin changes a waiting job's priority every few
// milliseconds (as `jobs priority` does), so the jobs waiting and their
// order change under the replicas' passes. The limits are never exceeded,
// checked after every change in the store: the test installs in its own
// database a trigger that, at the commit of every transaction that changed
// the jobs table, counts the jobs that hold a place (those not ended that
// left PENDING or were admitted: what the store counts as held) for the
// server and for each user, and records any count over its limit in a
// table. The checks run one at a time (a lock of the test's own, taken at
// the commit and held through it), so each sees every change committed
// before it. At the end that table is empty, the server and each user did
// reach their limit (the test measured at the limit), and every job
// SUCCEEDED.
//
// Two passes that read the same facts admit the same jobs, and the second
// one's marks change nothing; what the admission lock prevents is a pass
// that read the facts before another's admissions were committed and a
// change of the order since, admitting other jobs beside them. Without the
// lock (Store.Admit's pg_advisory_xact_lock taken out) this test finds the
// server at 6 of 5 or a user at 3 of 2 (in each of the two runs tried;
// without the priority changes, two runs passed even so).
func TestReplicasAdmitConcurrentlyOnPostgres(t *testing.T) {
	pg, err := pgtest.Start()
	if errors.Is(err, pgtest.ErrNoServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	url := pg.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	e := newEnv(t)
	t.Cleanup(func() { killLeftovers(t, e.home) })
	const serverLimit, userLimit, users, perUser = 5, 2, 3, 20
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`controller:
  poll_interval: 50ms
  store: %q
sim:
  run_time: 300ms
limits:
  server: {running_jobs: %d}
  per_user: {running_jobs: %d}
fair_share:
  half_life: 1h
`, url, serverLimit, userLimit)
	if err := os.WriteFile(sortiehome.Config(e.home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	task := e.write("task.yaml", "resources: {cloud: sim}\nrun: train\n")

	// The service migrates the store, then the check goes in.
	svc, err := service.Open(ctx, e.home, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	svc.StartDaemon = func(context.Context, string) error { return nil }
	svc.FindDaemon = nil
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, limitCheckSQL(serverLimit, userLimit)); err != nil {
		t.Fatalf("install the limit check: %v", err)
	}

	var reps []*suite.Replica
	defer func() {
		for _, r := range reps {
			r.Kill()
		}
		if t.Failed() {
			for _, r := range reps {
				if b, err := os.ReadFile(e.home + "/replica-" + r.Name + ".log"); err == nil {
					t.Logf("replica %s log:\n%s", r.Name, tail(string(b), 3000))
				}
			}
		}
	}()
	for _, name := range []string{"r1", "r2", "r3"} {
		r, err := suite.StartReplica(ctx, e.bin, e.home, name, 3*time.Second, db)
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}

	// Three users submit in turn, a job every 40ms; meanwhile an admin
	// changes the priority of a waiting job every few milliseconds, as
	// `jobs priority` does, so the order the replicas admit in keeps
	// changing under their passes.
	t0 := time.Now()
	submitted := make(chan struct{})
	reordered := make(chan int, 1)
	go func() {
		rnd := rand.New(rand.NewPCG(7, 33))
		admin := svc.As(&contract.Asker{Name: "admin", Admin: true})
		n := 0
		defer func() { reordered <- n }()
		for {
			select {
			case <-ctx.Done():
				return
			default:
			}
			var ids []int64
			rows, err := db.QueryContext(ctx, `SELECT id FROM jobs WHERE status = 'PENDING' AND admitted_at IS NULL ORDER BY id`)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("read the waiting jobs: %v", err)
				}
				return
			}
			for rows.Next() {
				var id int64
				if rows.Scan(&id) == nil {
					ids = append(ids, id)
				}
			}
			rows.Close()
			if len(ids) == 0 {
				select {
				case <-submitted:
					return // nothing waits, nor will
				default:
				}
			} else if _, err := admin.SetPriority(ctx, ids[rnd.IntN(len(ids))], rnd.IntN(1001)); err == nil {
				n++
			} else if !errors.Is(err, contract.ErrNotWaiting) {
				if ctx.Err() == nil {
					t.Errorf("change a priority: %v", err)
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	for i := range users * perUser {
		user := fmt.Sprintf("u%d", i%users+1)
		if _, err := svc.As(&contract.Asker{Name: user}).Launch(ctx, contract.LaunchRequest{File: task, Name: fmt.Sprintf("%s-%d", user, i)}); err != nil {
			t.Fatalf("submit job %d: %v", i, err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	close(submitted)
	reorders := <-reordered
	if reorders < 100 {
		t.Errorf("%d priorities changed while the jobs waited, want at least 100 for the order to change under the passes", reorders)
	}
	var ended, succeeded int
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE status IN (`+sqlStatuses(lifecycle.TerminalStatuses())+`)),
			COUNT(*) FILTER (WHERE status = 'SUCCEEDED') FROM jobs`).Scan(&ended, &succeeded); err != nil {
			t.Fatal(err)
		}
		if ended == users*perUser {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs ended within 3 minutes", ended, users*perUser)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(t0)
	for _, r := range reps {
		if err := r.Stop(time.Minute); err != nil {
			t.Error(err)
		}
	}
	if succeeded != ended {
		t.Errorf("%d of %d jobs SUCCEEDED, want all", succeeded, ended)
	}

	rows, err := db.QueryContext(ctx, `SELECT at, scope, held, lim FROM limit_excess ORDER BY at LIMIT 20`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var at time.Time
		var scope string
		var held, lim int
		if err := rows.Scan(&at, &scope, &held, &lim); err != nil {
			t.Fatal(err)
		}
		t.Errorf("at %s %s held %d running jobs, over the limit of %d", at.Format("15:04:05.000000"), scope, held, lim)
	}
	rows.Close()
	peaks := map[string]int{}
	var checks int
	rows, err = db.QueryContext(ctx, `SELECT scope, peak, checks FROM limit_peak`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var scope string
		var peak, n int
		if err := rows.Scan(&scope, &peak, &n); err != nil {
			t.Fatal(err)
		}
		peaks[scope] = peak
		checks += n
	}
	rows.Close()
	if peaks["server"] < serverLimit {
		t.Errorf("the server held at most %d running jobs, want the limit (%d) reached", peaks["server"], serverLimit)
	}
	for u := range users {
		if name := fmt.Sprintf("user u%d", u+1); peaks[name] < userLimit {
			t.Errorf("%s held at most %d running jobs, want the limit (%d) reached", name, peaks[name], userLimit)
		}
	}
	t.Logf("%d jobs in %s; %d priorities changed; %d checks of the limits; peaks %v", ended, took.Round(time.Millisecond), reorders, checks, peaks)
}

// sqlStatuses is statuses as a list of SQL strings.
func sqlStatuses(ss []lifecycle.Status) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + string(s) + "'"
	}
	return strings.Join(q, ", ")
}

// limitCheckSQL installs the check of the limits: at the commit of every
// transaction that inserted or updated jobs, once per transaction and one
// transaction at a time, it counts the jobs that hold a place, for the
// server and for each user, records any count over its limit in
// limit_excess and the highest seen in limit_peak.
func limitCheckSQL(server, user int) string {
	held := `status IN (` + sqlStatuses(lifecycle.ActiveStatuses()) + `) AND (status <> 'PENDING' OR admitted_at IS NOT NULL)`
	return fmt.Sprintf(`
CREATE TABLE limit_excess (at timestamptz NOT NULL, scope text NOT NULL, held int NOT NULL, lim int NOT NULL);
CREATE TABLE limit_peak (scope text PRIMARY KEY, peak int NOT NULL, checks int NOT NULL);
CREATE FUNCTION limit_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	n int;
	r record;
BEGIN
	IF current_setting('limit_check.tx', true) = txid_current()::text THEN
		RETURN NULL;
	END IF;
	PERFORM set_config('limit_check.tx', txid_current()::text, true);
	-- One check at a time, to the end of this transaction: each sees every
	-- transaction committed before it.
	PERFORM pg_advisory_xact_lock(7411);
	SELECT COUNT(*) INTO n FROM jobs WHERE %[1]s;
	IF n > %[2]d THEN
		INSERT INTO limit_excess VALUES (clock_timestamp(), 'server', n, %[2]d);
	END IF;
	INSERT INTO limit_peak VALUES ('server', n, 1)
		ON CONFLICT (scope) DO UPDATE SET peak = GREATEST(limit_peak.peak, n), checks = limit_peak.checks + 1;
	FOR r IN SELECT owner, COUNT(*) AS c FROM jobs WHERE %[1]s GROUP BY owner LOOP
		IF r.c > %[3]d THEN
			INSERT INTO limit_excess VALUES (clock_timestamp(), 'user ' || r.owner, r.c, %[3]d);
		END IF;
		INSERT INTO limit_peak VALUES ('user ' || r.owner, r.c, 1)
			ON CONFLICT (scope) DO UPDATE SET peak = GREATEST(limit_peak.peak, r.c), checks = limit_peak.checks + 1;
	END LOOP;
	RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER limit_check AFTER INSERT OR UPDATE ON jobs
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION limit_check();
`, held, server, user)
}
