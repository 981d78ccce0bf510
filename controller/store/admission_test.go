package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"sortie/strategy"
	"sortie/strategy/clocktest"
)

// held counts the jobs that hold a place: admitted or started, not ended.
func held(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM jobs WHERE `+activeSQL+`
		AND (status <> 'PENDING' OR admitted_at IS NOT NULL)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// One pass admits what the limit leaves room for, writes the others'
// reasons and places, and counts what it admitted as held at the next.
func TestAdmit(t *testing.T) { onEach(t, testAdmit) }

func testAdmit(t *testing.T, b backend) {
	ctx := context.Background()
	s, _ := openTest(t, b)
	var ids []int64
	for i, owner := range []string{"alice", "alice", "alice", "bob"} {
		id, err := s.CreateJob(ctx, &Job{Name: fmt.Sprintf("j%d", i), Spec: []byte(`{}`), Owner: owner, Priority: 500,
			Ask: FormatAsk(strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 2})}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	limits := strategy.Limits{Server: strategy.Amounts{strategy.Nodes: 4}}
	decide := func(f AdmissionFacts) []strategy.Placed {
		return strategy.Admit(strategy.AdmitInput{Waiting: f.Waiting, Held: f.Held, Limits: limits, Used: f.Used, HalfLife: time.Hour})
	}
	res, err := s.Admit(ctx, time.Time{}, decide)
	if err != nil {
		t.Fatal(err)
	}
	// alice's first, then bob's (alice now holds one), then alice waits.
	if want := []int64{ids[0], ids[3]}; fmt.Sprint(res.Admitted) != fmt.Sprint(want) || res.Waiting != 2 {
		t.Fatalf("admitted %v (%d waiting), want %v (2 waiting)", res.Admitted, res.Waiting, want)
	}
	j, err := s.Job(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := "waiting: the server's 4 nodes are in use; this job is next"; j.WaitReason != want || j.WaitPlace != 1 {
		t.Errorf("job %d waits with %q at %d, want %q at 1", j.ID, j.WaitReason, j.WaitPlace, want)
	}
	if j, _ := s.Job(ctx, ids[0]); j.AdmittedAt == nil || j.WaitReason != "" {
		t.Errorf("job %d: admitted %v reason %q, want admitted with no reason", j.ID, j.AdmittedAt, j.WaitReason)
	}
	// Again: nothing more fits.
	if res, err := s.Admit(ctx, time.Time{}, decide); err != nil || len(res.Admitted) != 0 {
		t.Fatalf("second pass admitted %v (%v), want none", res.Admitted, err)
	}
	// A waiting job's priority may change; an admitted one's may not.
	if err := s.SetPriority(ctx, ids[2], 900, "root"); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Job(ctx, ids[2]); j.Priority != 900 {
		t.Errorf("priority %d, want 900", j.Priority)
	}
	if err := s.SetPriority(ctx, ids[0], 900, "root"); err == nil {
		t.Error("changed an admitted job's priority")
	}
	// The facts as `server usage` reads them: what each holds, who waits.
	f, err := s.AdmissionFacts(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Waiting) != 2 || f.Waiting[0].User != "alice" || f.Held["alice"][strategy.Nodes] != 2 || f.Held["bob"][strategy.Jobs] != 1 {
		t.Errorf("facts: waiting %+v, held %v; want alice's 2 waiting, alice and bob holding one job each", f.Waiting, f.Held)
	}
}

// Three replicas on one store admit at once while jobs end: the limit is
// never exceeded, and every place that frees is taken.
func TestAdmitConcurrently(t *testing.T) { onEach(t, testAdmitConcurrently) }

func testAdmitConcurrently(t *testing.T, b backend) {
	ctx := context.Background()
	first, u := openTest(t, b)
	stores := []*Store{first}
	for range 2 {
		s, err := OpenURL(ctx, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	const jobs, limit, ends = 40, 5, 10
	for i := range jobs {
		if _, err := first.CreateJob(ctx, &Job{Name: fmt.Sprintf("j%d", i), Spec: []byte(`{}`), Owner: fmt.Sprintf("u%d", i%3),
			Priority: 500}, []NewTask{{}}); err != nil {
			t.Fatal(err)
		}
	}
	limits := strategy.Limits{Server: strategy.Amounts{strategy.Jobs: limit}}
	decide := func(f AdmissionFacts) []strategy.Placed {
		return strategy.Admit(strategy.AdmitInput{Waiting: f.Waiting, Held: f.Held, Limits: limits, Used: f.Used})
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	stop := make(chan struct{})
	for r, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Admit(ctx, time.Time{}, decide); err != nil {
					report("replica %d: %v", r, err)
					return
				}
				if n := held(t, s); n > limit {
					report("replica %d: %d jobs hold a place, over the limit of %d", r, n, limit)
				}
			}
		}()
	}
	// Meanwhile admitted jobs end, one at a time.
	for range ends {
		var id int64
		clocktest.Eventually(t, "a job admitted", func() bool {
			return first.db.QueryRowContext(ctx, `SELECT id FROM jobs WHERE status = 'PENDING' AND admitted_at IS NOT NULL ORDER BY id LIMIT 1`).Scan(&id) == nil
		})
		if _, err := first.db.ExecContext(ctx, `UPDATE jobs SET status = 'SUCCEEDED' WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
		if n := held(t, first); n > limit {
			report("after an end: %d jobs hold a place, over the limit of %d", n, limit)
		}
	}
	// Every freed place is taken again.
	clocktest.Eventually(t, "every freed place taken", func() bool { return held(t, first) >= limit })
	close(stop)
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if n := held(t, first); n != limit {
		t.Errorf("%d jobs hold a place at the end, want %d", n, limit)
	}
	var admitted int
	first.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE admitted_at IS NOT NULL`).Scan(&admitted)
	if admitted != limit+ends {
		t.Errorf("%d jobs admitted in all, want %d", admitted, limit+ends)
	}
}

// On a PostgreSQL database whose transactions default to repeatable read
// (default_transaction_isolation, which a team's database may set), a pass
// that waited for the admission lock still sees what the pass before it
// admitted. Here the limit is one running job and job X waits as next in
// line; the place frees; pass 1 reads the facts and, while it decides, a
// job W of higher priority is submitted and pass 2 starts and waits for
// the lock. Pass 1 admits X. Pass 2, had its view of the store been taken
// before it got the lock, would see W first and the place free, and admit
// W beside X.
func TestAdmitAfterTheLockSeesThePassBefore(t *testing.T) {
	ctx := context.Background()
	first, u := openTest(t, postgresBackend)
	if _, err := first.db.ExecContext(ctx, `DO $x$ BEGIN EXECUTE 'ALTER DATABASE ' || quote_ident(current_database()) ||
		' SET default_transaction_isolation = ''repeatable read'''; END $x$`); err != nil {
		t.Fatal(err)
	}
	// Stores opened now start their sessions at repeatable read.
	var passes []*Store
	for range 2 {
		s, err := OpenURL(ctx, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		passes = append(passes, s)
	}
	var level string
	if err := passes[0].db.QueryRowContext(ctx, `SHOW transaction_isolation`).Scan(&level); err != nil || level != "repeatable read" {
		t.Fatalf("the passes' sessions run at %q (%v), want repeatable read", level, err)
	}
	limits := strategy.Limits{Server: strategy.Amounts{strategy.Jobs: 1}}
	decide := func(f AdmissionFacts) []strategy.Placed {
		return strategy.Admit(strategy.AdmitInput{Waiting: f.Waiting, Held: f.Held, Limits: limits, Used: f.Used, HalfLife: time.Hour})
	}
	create := func(name string, priority int) int64 {
		t.Helper()
		id, err := first.CreateJob(ctx, &Job{Name: name, Spec: []byte(`{}`), Owner: "alice", Priority: priority}, []NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	y := create("y", 500)
	if _, err := first.Admit(ctx, time.Time{}, decide); err != nil {
		t.Fatal(err)
	}
	x := create("x", 500)
	if _, err := first.Admit(ctx, time.Time{}, decide); err != nil {
		t.Fatal(err)
	}
	if j, _ := first.Job(ctx, x); j.AdmittedAt != nil || j.WaitPlace != 1 {
		t.Fatalf("job x: admitted %v, place %d; want it waiting, next", j.AdmittedAt, j.WaitPlace)
	}
	if _, err := first.db.ExecContext(ctx, `UPDATE jobs SET status = 'SUCCEEDED' WHERE id = ?`, y); err != nil {
		t.Fatal(err)
	}

	var w int64
	second := make(chan error, 1)
	var once sync.Once // a pass run again (PostgreSQL aborted it) submits no second w
	res, err := passes[0].Admit(ctx, time.Time{}, func(f AdmissionFacts) []strategy.Placed {
		once.Do(func() {
			w = create("w", 900)
			go func() {
				_, err := passes[1].Admit(ctx, time.Time{}, decide)
				second <- err
			}()
			clocktest.Eventually(t, "the second pass waiting for the admission lock", func() bool {
				var n int
				first.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
					AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
				return n == 1
			})
		})
		return decide(f)
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Admitted) != fmt.Sprint([]int64{x}) {
		t.Fatalf("the first pass admitted %v, want job x (%d)", res.Admitted, x)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := held(t, first); n != 1 {
		j, _ := first.Job(ctx, w)
		t.Errorf("%d jobs hold a place, over the limit of 1 (w admitted at %v)", n, j.AdmittedAt)
	}
}
