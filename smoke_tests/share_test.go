package smoke_tests

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	sortiehome "sortie/controller/home"
	"sortie/controller/service"
	"sortie/smoke_tests/bench/suite"
)

// Three users share a server limit of 20 running jobs on sim, each job
// running shareRunTime: big submits 1,000 jobs, mid 100 and small 10.
// big's are stored first and the controller started on them, so big holds
// the whole limit; once those 20 run, mid's 100 are submitted, and small's
// 10 halfway through a turn of the limit (when the 20 running jobs have
// run half a run time). Jobs are submitted through the service, in this
// process, as the CLI's launch stores them. The run goes on until mid has
// no job left waiting; then the controller is stopped, big's rest never
// runs, and everything is measured from the store: each job's submission
// and admission, and its attempts' start and end.
//
// small's first job waits, from its submission to its attempt's start, no
// more than one job's run time (the median of the attempts' durations,
// start to end): it is given a place at the first turn of the limit after
// it arrives, ahead of big's backlog. (Arriving just after a turn, it
// would wait one run time plus the controller's delay from an end to the
// next start; arriving halfway keeps the check about the order.) A
// first-come queue makes it wait behind big's 1,000.
//
// Shares are compared over stretches in which every user compared has
// work. Admission does not stop a running job to make room, so a user who
// arrives while the limit is full gets places only as running jobs end: a
// stretch of users S begins once every user in S has had a job started
// (the latest of their first attempts' starts), and ends when the first of
// them has no job waiting any more (the latest admission of that user's
// jobs; big never runs out). Over a stretch, a user's running time is the
// sum of their attempts' time inside it, and their share is that over the
// sum of the running time of every user in S there (jobs of users not in
// S are left out). The stretches measured:
//
//   - {big, mid, small}: from small's first start until small's last job
//     is admitted, about one run time. 20 places cannot be split equally
//     three ways (each user holds 6 or 7 at a time) and one run time is too
//     short for the odd place to go round, so each share must be within
//     one place of a third: |share - 1/3| <= 1/20.
//   - {big, mid}: from mid's first start until mid's last job is admitted,
//     some ten run times. Each share must be within 5% of a half:
//     |share - 1/2| <= 0.05 * 1/2.
//
// A first-come queue fails: mid and small do not start while big's jobs
// wait (as with fair_share.weights giving big 1e9, which puts big first:
// small's first job does not start within 10 run times and the test
// stops). So does an order that gives every free place to the user with
// the least past use: mid and small would take every place from big.
func TestFairShareOnSim(t *testing.T) {
	e := newEnv(t)
	const limit = 20
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("controller:\n  poll_interval: 100ms\nsim:\n  run_time: %s\nlimits:\n  server: {running_jobs: %d}\nfair_share:\n  half_life: 1h\n", shareRunTime, limit)
	if err := os.WriteFile(sortiehome.Config(e.home), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	task := e.write("task.yaml", "resources: {cloud: sim}\nrun: train\n")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	svc, err := service.Open(ctx, e.home, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	svc.StartDaemon = func(context.Context, string) error { return nil } // started below
	svc.FindDaemon = nil
	var d *suite.Daemon
	submit := func(user string, n int) {
		t.Helper()
		as := svc.As(&contract.Asker{Name: user})
		for i := range n {
			if _, err := as.Launch(ctx, contract.LaunchRequest{File: task, Name: fmt.Sprintf("%s-%d", user, i)}); err != nil {
				t.Fatalf("submit %s's job %d: %v", user, i, err)
			}
			if d != nil && i%20 == 19 {
				d.Nudge()
			}
		}
		if d != nil {
			d.Nudge()
		}
	}
	t0 := time.Now()
	logf := func(what string) { t.Logf("%6.2fs %s", time.Since(t0).Seconds(), what) }
	submit("big", 1000)
	logf("big's 1000 stored")
	d, err = suite.StartDaemon(ctx, e.bin, e.home)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Kill()
	db, err := sql.Open("sqlite3", "file:"+sortiehome.State(e.home)+"?_busy_timeout=15000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	waitUntil := func(what string, within time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(within)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s", what, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitUntil("big's first 20 jobs started", 30*time.Second, func() bool { return count(`SELECT COUNT(*) FROM attempts`) >= limit })
	logf("big's first 20 started")
	submit("mid", 100)
	logf("mid's 100 stored")
	// small arrives halfway through a turn of the limit: the 20 places are
	// held by jobs that started half a run time ago.
	waitUntil("20 jobs half way through their run", 30*time.Second, func() bool {
		started := runningSince(t, db)
		return len(started) == limit && time.Since(slices.MaxFunc(started, time.Time.Compare)) >= shareRunTime/2
	})
	submit("small", 10)
	logf("small's 10 stored")
	// Meanwhile the queue says why the waiting ones wait.
	sawReason := false
	for _, j := range e.queue() {
		if j.WaitReason != nil && strings.HasPrefix(*j.WaitReason, fmt.Sprintf("waiting: the server runs %d of %d jobs (server limit)", limit, limit)) && j.QueuePlace != nil {
			sawReason = true
			break
		}
	}
	if !sawReason {
		t.Errorf("no waiting job in the queue says it waits for the server's limit of %d running jobs", limit)
	}
	// A first-come queue would start small's first job some 55 run times
	// from now: stop early.
	waitUntil("small's first job started", 10*shareRunTime, func() bool {
		return count(`SELECT COUNT(*) FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.owner = 'small'`) > 0
	})
	waitUntil("every job of mid admitted", 3*time.Minute, func() bool {
		return count(`SELECT COUNT(*) FROM jobs WHERE owner = 'mid' AND admitted_at IS NULL`) == 0
	})
	logf("mid's last admitted")
	if err := d.Stop(time.Minute); err != nil {
		t.Fatal(err)
	}
	logf("controller stopped")
	r := readShareRun(t, db)

	// Every attempt that ended succeeded.
	var durations []time.Duration
	for _, a := range r.attempts {
		if a.end == nil {
			continue
		}
		if a.outcome != "succeeded" {
			t.Errorf("job %d's attempt ended %q, want succeeded", a.job, a.outcome)
		}
		durations = append(durations, a.end.Sub(a.start))
	}
	if len(durations) < 5*limit {
		t.Fatalf("%d attempts ended, want at least %d", len(durations), 5*limit)
	}
	runTime := suite.Median(durations)

	first := r.firstJob("small")
	start := r.firstStart(first.id)
	if start == nil {
		t.Fatalf("small's first job (%d) never started", first.id)
	}
	wait := start.Sub(first.submitted)
	if wait > runTime {
		t.Errorf("small's first job waited %s from its submission to its start, more than one job's run time (%s)", wait.Round(time.Millisecond), runTime.Round(time.Millisecond))
	}
	t.Logf("one job's run time %s (sim.run_time %s); small's first job waited %s", runTime.Round(time.Millisecond), shareRunTime, wait.Round(time.Millisecond))

	for _, s := range []struct {
		users []string
		tol   float64 // how far from an equal share each may be
		why   string
	}{
		{[]string{"big", "mid", "small"}, 1.0 / limit, "one place of the limit"},
		{[]string{"big", "mid"}, 0.05 / 2, "5% of an equal share"},
	} {
		from, to := r.stretch(s.users)
		if !from.Before(to) {
			t.Errorf("%v never all had work: the stretch is from %s to %s", s.users, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
			continue
		}
		shares := r.shares(s.users, from, to)
		t.Logf("%v from %s for %s: shares %v", s.users, from.Format("15:04:05.000"), to.Sub(from).Round(time.Millisecond), shares)
		if len(s.users) == 2 && to.Sub(from) < 5*runTime {
			t.Errorf("%v shared for %s only, want at least 5 run times to measure", s.users, to.Sub(from).Round(time.Millisecond))
		}
		equal := 1 / float64(len(s.users))
		for _, u := range s.users {
			if math.Abs(shares[u]-equal) > s.tol {
				t.Errorf("%s's share of the running time while %v all had work is %.3f, want within %s of %.3f (%.3f to %.3f)",
					u, s.users, shares[u], s.why, equal, equal-s.tol, equal+s.tol)
			}
		}
	}
}

// shareRunTime is what each job of TestFairShareOnSim runs for: long
// beside the controller's poll interval (100ms), which adds to every
// turn of a place, short enough for the run to take a minute or so.
const shareRunTime = 3 * time.Second

// shareRun is what the store holds of a run: its jobs and their attempts.
type shareRun struct {
	jobs     map[int64]*shareJob
	attempts []shareAttempt
}

type shareJob struct {
	id        int64
	owner     string
	submitted time.Time
	admitted  *time.Time
}

type shareAttempt struct {
	job     int64
	owner   string
	start   time.Time
	end     *time.Time
	outcome string
}

func readShareRun(t *testing.T, db *sql.DB) *shareRun {
	t.Helper()
	r := &shareRun{jobs: map[int64]*shareJob{}}
	rows, err := db.Query(`SELECT id, owner, submitted_at, admitted_at FROM jobs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var j shareJob
		var submitted string
		var admitted sql.NullString
		if err := rows.Scan(&j.id, &j.owner, &submitted, &admitted); err != nil {
			t.Fatal(err)
		}
		j.submitted = mustTime(t, submitted)
		if admitted.Valid && admitted.String != "" {
			at := mustTime(t, admitted.String)
			j.admitted = &at
		}
		r.jobs[j.id] = &j
	}
	rows.Close()
	rows, err = db.Query(`SELECT a.job_id, j.owner, a.started_at, a.ended_at, a.outcome FROM attempts a JOIN jobs j ON j.id = a.job_id ORDER BY a.started_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a shareAttempt
		var started string
		var ended, outcome sql.NullString
		if err := rows.Scan(&a.job, &a.owner, &started, &ended, &outcome); err != nil {
			t.Fatal(err)
		}
		a.start, a.outcome = mustTime(t, started), outcome.String
		if ended.Valid && ended.String != "" {
			at := mustTime(t, ended.String)
			a.end = &at
		}
		r.attempts = append(r.attempts, a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("a time in the store: %v", err)
	}
	return at
}

// runningSince is when each attempt not ended started.
func runningSince(t *testing.T, db *sql.DB) []time.Time {
	t.Helper()
	rows, err := db.Query(`SELECT started_at FROM attempts WHERE ended_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, mustTime(t, s))
	}
	return out
}

// firstJob is user's first submitted job.
func (r *shareRun) firstJob(user string) *shareJob {
	var first *shareJob
	for _, j := range r.jobs {
		if j.owner == user && (first == nil || j.submitted.Before(first.submitted) || j.submitted.Equal(first.submitted) && j.id < first.id) {
			first = j
		}
	}
	return first
}

// firstStart is when job's first attempt started; nil if none did.
func (r *shareRun) firstStart(job int64) *time.Time {
	for _, a := range r.attempts {
		if a.job == job {
			return &a.start
		}
	}
	return nil
}

// stretch is when every one of users had work: from the latest of their
// first starts until the first of them has no job waiting (the latest
// admission of their jobs; a user with a job never admitted has work to
// the end).
func (r *shareRun) stretch(users []string) (from, to time.Time) {
	to = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, u := range users {
		started := false
		for _, a := range r.attempts {
			if a.owner == u {
				if a.start.After(from) {
					from = a.start
				}
				started = true
				break // in start order: the user's first
			}
		}
		if !started {
			return to, to
		}
		var last time.Time
		waitsToTheEnd := false
		for _, j := range r.jobs {
			if j.owner != u {
				continue
			}
			if j.admitted == nil {
				waitsToTheEnd = true
				break
			}
			if j.admitted.After(last) {
				last = *j.admitted
			}
		}
		if !waitsToTheEnd && last.Before(to) {
			to = last
		}
	}
	return from, to
}

// shares is each of users' running time from from to to over all of
// theirs: an attempt not ended runs to the end.
func (r *shareRun) shares(users []string, from, to time.Time) map[string]float64 {
	ran := map[string]time.Duration{}
	var total time.Duration
	for _, a := range r.attempts {
		if !slices.Contains(users, a.owner) {
			continue
		}
		end := to
		if a.end != nil && a.end.Before(to) {
			end = *a.end
		}
		start := a.start
		if start.Before(from) {
			start = from
		}
		if end.After(start) {
			ran[a.owner] += end.Sub(start)
			total += end.Sub(start)
		}
	}
	out := map[string]float64{}
	for _, u := range users {
		if total > 0 {
			out[u] = float64(ran[u]) / float64(total)
		}
	}
	return out
}
