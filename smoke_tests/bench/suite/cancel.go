package suite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"sortie/provision/sim"
)

// CancelOptions is a cancel of many running jobs at once, with jobs that
// keep restarting beside them whose decisions are timed before and during
// the cancel.
type CancelOptions struct {
	Bin  string // the sortie binary
	Home string // a fresh directory for the controller's SORTIE_HOME
	// Jobs run on the sim until cancelled (sweep-0, sweep-1, ...).
	Jobs int
	// Churn jobs (churn-0, ...) exit 29 every ChurnRunTime and restart on
	// it with a 1ms back-off, for as long as the run lasts.
	Churn        int
	ChurnRunTime time.Duration
	// Baseline is how long the churn's decisions are timed before the cancel.
	Baseline time.Duration
	Timeout  time.Duration // bounds each wait
	Progress io.Writer
}

// CancelResult is what a cancel run measured.
type CancelResult struct {
	// Cancel is from running `sortie jobs cancel -n 'sweep-*' -y` until
	// every sweep job was CANCELLED.
	Cancel time.Duration
	// Cancelled is how many sweep jobs ended CANCELLED; ChurnActive how
	// many churn jobs were still going when the cancel was over.
	Cancelled, ChurnActive int
	// BaselineDecisions and DuringDecisions are the churn's decision
	// latencies (as the sim records them) seen in the baseline window and
	// while the cancel ran.
	BaselineDecisions, DuringDecisions []time.Duration
}

const sweepTask = `name: sweep
resources: {cloud: sim}
run: python train.py
`

func churnTask(runTime time.Duration) string {
	return fmt.Sprintf(`name: churn
resources:
  cloud: sim
  job_recovery: {recover_on_exit_codes: [29]}
envs: {%s: %s, %s: "29"}
run: python train.py
`, sim.EnvRunTime, runTime, sim.EnvExitCode)
}

// cancelConfig: sweep tasks run for an hour; restarts wait 1ms, so that
// a decision's latency is the controller's own work.
const cancelConfig = `controller:
  restart_backoff_initial: 1ms
  restart_backoff_max: 1ms
sim:
  run_time: 1h
  decision_log: sim/decisions.log
`

// RunCancel starts Jobs sweep jobs and Churn churn jobs, waits until every
// sweep job runs, times the churn's decisions for Baseline, then cancels
// every sweep job with one command and waits until all are CANCELLED.
func RunCancel(ctx context.Context, o CancelOptions) (*CancelResult, error) {
	h, err := openHome(ctx, o.Bin, o.Home, cancelConfig, sweepTask)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	churn := filepath.Join(o.Home, "work", "churn.yaml")
	if err := os.WriteFile(churn, []byte(churnTask(o.ChurnRunTime)), 0o644); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "cancel: submitting %d jobs to cancel and %d that keep restarting\n", o.Jobs, o.Churn)
	if _, _, err := submitNamed(ctx, h.daemon, churn, "churn", o.Churn, 1000, o.Progress); err != nil {
		return nil, err
	}
	if _, _, err := submitNamed(ctx, h.daemon, h.task, "sweep", o.Jobs, 1000, o.Progress); err != nil {
		return nil, err
	}
	if err := waitCount(ctx, h.db, "sweep-*", "RUNNING", o.Jobs, o.Timeout, o.Progress); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "cancel: every job runs; timing decisions for %s\n", o.Baseline)
	b0 := time.Now()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.Baseline):
	}
	b1 := time.Now()

	r := &CancelResult{}
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, o.Bin, "jobs", "cancel", "-n", "sweep-*", "-y")
	cmd.Env = Environ(o.Home)
	cmd.Dir = filepath.Join(o.Home, "work")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sortie jobs cancel: %w: %s", err, tail(out))
	}
	if err := waitCount(ctx, h.db, "sweep-*", "CANCELLED", o.Jobs, o.Timeout, o.Progress); err != nil {
		return nil, err
	}
	t1 := time.Now()
	r.Cancel = t1.Sub(t0)
	r.Cancelled = o.Jobs
	if err := h.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE name GLOB 'churn-*' AND status IN ('PENDING', 'STARTING', 'RUNNING', 'RECOVERING')`).Scan(&r.ChurnActive); err != nil {
		return r, err
	}
	ds, err := sim.ReadDecisions(filepath.Join(o.Home, "sim", "decisions.log"))
	if err != nil {
		return r, err
	}
	for _, d := range ds {
		switch {
		case !d.Seen.Before(b0) && d.Seen.Before(b1):
			r.BaselineDecisions = append(r.BaselineDecisions, d.Latency())
		case !d.Seen.Before(t0) && !d.Seen.After(t1):
			r.DuringDecisions = append(r.DuringDecisions, d.Latency())
		}
	}
	return r, h.daemon.Stop(time.Minute)
}

// waitCount waits until n jobs whose name matches glob have status.
func waitCount(ctx context.Context, db *sql.DB, glob, status string, n int, timeout time.Duration, progress io.Writer) error {
	var got int
	next := time.Now()
	return until(ctx, 20*time.Millisecond, timeout, func() (bool, error) {
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE name GLOB ? AND status = ?`, glob, status).Scan(&got); err != nil {
			return false, fmt.Errorf("count %s jobs: %w", status, err)
		}
		if got < n && time.Now().After(next) {
			fmt.Fprintf(progress, "  %d/%d %s %s\n", got, n, glob, status)
			next = time.Now().Add(5 * time.Second)
		}
		return got >= n, nil
	}, func() error { return fmt.Errorf("%d of %d %s jobs %s within %s", got, n, glob, status, timeout) })
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
