package suite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx", for a PostgreSQL store

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/service"
	"sortie/provision/sim"
)

// ReplicasOptions is a run of sim jobs on several replicas of the
// controller sharing one home and store, some of them killed with kill -9
// while the jobs run.
type ReplicasOptions struct {
	Bin  string // the sortie binary
	Home string // a fresh directory, the replicas' shared SORTIE_HOME
	Jobs int
	// Replicas are started before the jobs are submitted; Kill of them
	// (the first ones) are killed with kill -9 once KillAfter of the jobs
	// have run.
	Replicas, Kill int
	KillAfter      float64
	RunTime        time.Duration
	// ExitShare of the jobs exit 29 on their first attempt (restarted);
	// PreemptShare of their first clusters are preempted.
	ExitShare, PreemptShare float64
	Seed                    uint64
	// TTL is the replicas' lease TTL; zero keeps the default.
	TTL time.Duration
	// Store is the store's URL (controller.store); "" is the home's
	// SQLite file.
	Store string
	// PollInterval is the controller's; zero keeps its default.
	PollInterval time.Duration
	Timeout      time.Duration
	Progress     io.Writer
	// AfterTakeover, when set, is called once the survivors hold every
	// job, while the jobs still run.
	AfterTakeover func()
}

// ReplicasResult is what a replicas run measured and found.
type ReplicasResult struct {
	Statuses map[string]int
	// Wall is from the first submit until every job ended.
	Wall time.Duration
	// Orphaned is how many unfinished jobs the killed replicas held when
	// they were killed; Takeover is from the kill until a live replica
	// held every one of them (a replica steps the jobs it claims at once).
	Orphaned int
	Takeover time.Duration
	// Survivors are the replicas left; SurvivorsHeld is how many of the
	// unfinished jobs they held, and Unfinished how many there were, both
	// read once the takeover was done.
	Survivors                 []string
	SurvivorsHeld, Unfinished int
	// Attempts is how many attempts ran; Starts how many task starts the
	// shared sim counted (one per attempt and node when none ran twice).
	Attempts, Starts int
	// CPU is what the surviving replicas used, just before they stopped.
	CPU time.Duration
	// Problems are what the store and the sim say went wrong: an attempt
	// started twice, two attempts of a job open at once, a cluster left.
	Problems []string
}

// replicaConfig is the replicas' config.yaml.
func (o ReplicasOptions) config() string {
	poll := ""
	if o.PollInterval > 0 {
		poll = fmt.Sprintf("  poll_interval: %s\n", o.PollInterval)
	}
	if o.Store != "" {
		poll += fmt.Sprintf("  store: %q\n", o.Store)
	}
	return fmt.Sprintf(`controller:
%s  restart_backoff_initial: 1ms
  restart_backoff_max: 1ms
sim:
  run_time: %s
  exit_codes: [{code: 29, share: %g, attempt: 1}]
  preempt_rate: %g
  preempt_attempts: 1
  seed: %d
`, poll, o.RunTime, o.ExitShare, o.PreemptShare, o.Seed)
}

// Replica is one replica process started for a run.
type Replica struct {
	*Daemon
	Name string
}

// StartReplica runs `sortie-controller run --replica NAME` on home, its
// output in home/replica-NAME.log, and returns once it has registered in
// the store.
func StartReplica(ctx context.Context, bin, home, name string, ttl time.Duration, db *sql.DB) (*Replica, error) {
	args := []string{"run", "--replica", name}
	if ttl > 0 {
		args = append(args, "--lease-ttl", ttl.String())
	}
	d, err := startController(ctx, bin, home, "replica "+name, "replica-"+name+".log", "register", 30*time.Second, 20*time.Millisecond,
		func(pid int) bool {
			var n int
			// No placeholders: their form differs between SQLite and PostgreSQL.
			err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT COUNT(*) FROM replicas WHERE name = '%s' AND pid = %d`, name, pid)).Scan(&n)
			return err == nil && n == 1
		}, args...)
	if err != nil {
		return nil, err
	}
	return &Replica{Daemon: d, Name: name}, nil
}

// RunReplicas starts the replicas, submits every job, kills those to be
// killed once KillAfter of the jobs have run, and waits for every job to
// end; then it stops the survivors and checks what the store and the sim
// say of the run.
func RunReplicas(ctx context.Context, o ReplicasOptions) (*ReplicasResult, error) {
	if err := os.MkdirAll(filepath.Join(o.Home, "work"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Home, "config.yaml"), []byte(o.config()), 0o644); err != nil {
		return nil, err
	}
	file := filepath.Join(o.Home, "work", "task.yaml")
	if err := os.WriteFile(file, []byte(simTask), 0o644); err != nil {
		return nil, err
	}
	// The store is made (migrated) before the replicas start, by the
	// service the jobs are submitted through.
	svc, err := openService(ctx, o.Home)
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	db, err := openDB(o.Home)
	if strings.HasPrefix(o.Store, "postgres") {
		db, err = sql.Open("pgx", o.Store)
	}
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var reps []*Replica
	defer func() {
		for _, r := range reps {
			r.Kill()
		}
	}()
	for i := range o.Replicas {
		r, err := StartReplica(ctx, o.Bin, o.Home, fmt.Sprintf("r%d", i+1), o.TTL, db)
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	fmt.Fprintf(o.Progress, "replicas: %d running; submitting %d jobs (run time %s)\n", len(reps), o.Jobs, o.RunTime)
	t0 := time.Now()
	for i := range o.Jobs {
		if _, err := svc.Launch(ctx, launchRequest(file, i)); err != nil {
			return nil, fmt.Errorf("submit job %d of %d: %w", i+1, o.Jobs, err)
		}
	}
	res := &ReplicasResult{}
	for _, r := range reps[o.Kill:] {
		res.Survivors = append(res.Survivors, r.Name)
	}
	if o.Kill > 0 {
		if err := waitRan(ctx, db, int(o.KillAfter*float64(o.Jobs)), o.Timeout); err != nil {
			return res, err
		}
		if err := killAndTakeOver(ctx, db, reps[:o.Kill], o.Timeout, res); err != nil {
			return res, err
		}
		if o.AfterTakeover != nil {
			o.AfterTakeover()
		}
		fmt.Fprintf(o.Progress, "replicas: at %s killed %d holding %d jobs; taken over in %s; survivors hold %d of %d unfinished\n",
			time.Now().Add(-res.Takeover).UTC().Format("15:04:05.000"), o.Kill, res.Orphaned, res.Takeover.Round(time.Millisecond), res.SurvivorsHeld, res.Unfinished)
	}
	res.Statuses, err = waitAll(ctx, db, o.Jobs, 200*time.Millisecond, o.Timeout, 15*time.Second, o.Progress)
	if err != nil {
		return res, err
	}
	res.Wall = time.Since(t0)
	var stopErr error
	for _, r := range reps[o.Kill:] {
		u, err := ReadUsage(r.Pid)
		res.CPU += u.CPU
		stopErr = errors.Join(stopErr, err, r.Stop(time.Minute))
	}
	if stopErr != nil {
		return res, stopErr
	}
	return res, checkRun(ctx, db, o.Home, res)
}

// waitRan waits until n jobs have started running at least once.
func waitRan(ctx context.Context, db *sql.DB, n int, timeout time.Duration) error {
	var ran int
	return until(ctx, 50*time.Millisecond, timeout, func() (bool, error) {
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE started_at IS NOT NULL`).Scan(&ran)
		return err == nil && ran >= n, err
	}, func() error {
		return fmt.Errorf("%d of the %d jobs to run before the kill ran within %s", ran, n, timeout)
	})
}

// killAndTakeOver kills the replicas dead with kill -9, all at once, and
// waits until the survivors hold every unfinished job they held.
func killAndTakeOver(ctx context.Context, db *sql.DB, dead []*Replica, timeout time.Duration, res *ReplicasResult) error {
	var names []string
	for _, r := range dead {
		_ = syscall.Kill(-r.Pid, syscall.SIGKILL)
		names = append(names, r.Name)
	}
	t0 := time.Now()
	for _, r := range dead {
		r.Kill() // reaped
	}
	inDead := `SELECT id FROM replicas WHERE name IN ('` + strings.Join(names, "','") + `')`
	inLive := `SELECT id FROM replicas WHERE name IN ('` + strings.Join(res.Survivors, "','") + `')`
	active := `status NOT IN ('SUCCEEDED','CANCELLED','FAILED','FAILED_SETUP','FAILED_PRECHECKS','FAILED_NO_RESOURCE','FAILED_CONTROLLER')`
	orphans := map[int64]bool{}
	rows, err := db.QueryContext(ctx, `SELECT id FROM jobs WHERE `+active+` AND lease_holder IN (`+inDead+`)`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		orphans[id] = true
	}
	rows.Close()
	res.Orphaned = len(orphans)
	var left int
	err = until(ctx, 20*time.Millisecond, timeout, func() (bool, error) {
		// An orphan is taken over once a survivor holds it, or it has ended
		// (which only a survivor can have recorded).
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE `+active+` AND (lease_holder IS NULL OR lease_holder NOT IN (`+inLive+`))`).Scan(&left)
		return err == nil && left == 0, err
	}, func() error {
		return fmt.Errorf("%d unfinished jobs not held by the survivors %s after %s", left, timeout, res.Survivors)
	})
	if err != nil {
		return err
	}
	res.Takeover = time.Since(t0)
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN lease_holder IN (`+inLive+`) THEN 1 ELSE 0 END), 0) FROM jobs WHERE `+active).
		Scan(&res.Unfinished, &res.SurvivorsHeld); err != nil {
		return err
	}
	return nil
}

// checkRun reads what the store and the shared sim say of a finished run:
// no attempt started twice (the sim counts each start of a task on a
// node), no two attempts of one job open at once, every cluster gone, and
// no lease left on an unfinished job.
func checkRun(ctx context.Context, db *sql.DB, home string, res *ReplicasResult) error {
	type att struct {
		job, task, n int
		started      time.Time
		ended        *time.Time
		replaced     bool
		state        string
	}
	rows, err := db.QueryContext(ctx, `SELECT job_id, task_idx, attempt, started_at, ended_at, replaced_at IS NOT NULL, state FROM attempts ORDER BY job_id, task_idx, attempt`)
	if err != nil {
		return err
	}
	var as []att
	for rows.Next() {
		var a att
		var started string
		var ended sql.NullString
		if err := rows.Scan(&a.job, &a.task, &a.n, &started, &ended, &a.replaced, &a.state); err != nil {
			rows.Close()
			return err
		}
		a.started, _ = time.Parse(time.RFC3339Nano, started)
		if ended.Valid {
			t, _ := time.Parse(time.RFC3339Nano, ended.String)
			a.ended = &t
		}
		as = append(as, a)
	}
	rows.Close()
	res.Attempts = len(as)
	for i, a := range as {
		if a.state != "ended" {
			res.Problems = append(res.Problems, fmt.Sprintf("job %d task %d attempt %d is still %s", a.job, a.task, a.n, a.state))
		}
		if i == 0 {
			continue
		}
		p := as[i-1]
		if p.job == a.job && !p.replaced && (p.ended == nil || a.started.Before(*p.ended)) {
			res.Problems = append(res.Problems, fmt.Sprintf("job %d: attempt %d of task %d began at %s, before attempt %d of task %d ended",
				a.job, a.n, a.task, a.started.Format(time.RFC3339Nano), p.n, p.task))
		}
	}
	st, err := sim.ReadShared(clouds.SimSharedDir(home))
	if err != nil {
		return err
	}
	for k, n := range st.Starts {
		res.Starts += n
		if n > 1 {
			res.Problems = append(res.Problems, fmt.Sprintf("task start %s (job/task/attempt/node) happened %d times", k, n))
		}
	}
	if len(st.Clusters) > 0 {
		sort.Strings(st.Clusters)
		res.Problems = append(res.Problems, fmt.Sprintf("%d clusters left: %v", len(st.Clusters), st.Clusters[:min(len(st.Clusters), 10)]))
	}
	// The survivors stopped gracefully: they gave up their leases and
	// their rows.
	var left int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM replicas WHERE name IN ('`+strings.Join(res.Survivors, "','")+`')`).Scan(&left); err != nil {
		return err
	}
	if left > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("%d of the replicas stopped gracefully are still listed", left))
	}
	return nil
}

// openService opens the service jobs are submitted through, in this
// process; it starts no controller (the replicas drive the jobs).
func openService(ctx context.Context, home string) (*service.Service, error) {
	svc, err := service.Open(ctx, home, clouds.Light())
	if err != nil {
		return nil, err
	}
	svc.StartDaemon = func(context.Context, string) error { return nil }
	svc.FindDaemon = nil
	return svc, nil
}

func launchRequest(file string, i int) contract.LaunchRequest {
	return contract.LaunchRequest{File: file, Name: fmt.Sprintf("replicas-%d", i)}
}
