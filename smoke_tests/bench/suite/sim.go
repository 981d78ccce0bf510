package suite

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"sortie/provision"
	"sortie/provision/sim"
)

// SimOptions is a run of many jobs on hollow nodes.
type SimOptions struct {
	Bin  string // the sortie binary
	Home string // a fresh directory for the controller's SORTIE_HOME
	Jobs int
	// RunTime is every task's run time on the hollow nodes.
	RunTime time.Duration
	// ExitShare of the jobs exit 29 on their first attempt, which their
	// recover_on_exit_codes restarts; PreemptShare of the jobs' first
	// clusters are preempted while the task runs.
	ExitShare, PreemptShare float64
	Seed                    uint64
	// AllOn runs the task with job_recovery's failure verdicts on
	// (confirm_failures: 1, max_restarts_without_progress: 3) beside the
	// quarantine, which is on by default; the jobs end as without them.
	AllOn bool
	// Prices gives the sim a price (config.yaml sim.prices, read into
	// the controller's price cache) and the task a max_cost it never
	// reaches: every attempt is priced and every step weighs the budget.
	Prices bool
	// PollInterval is the controller's; zero keeps its default.
	PollInterval time.Duration
	// Timeout bounds the wait for every job to end.
	Timeout  time.Duration
	Progress io.Writer
}

// SimResult is what a sim run measured and what it ended with.
type SimResult struct {
	Jobs     int
	Statuses map[string]int
	// Recoveries is the sum of the jobs' recovery counts; WantRecoveries
	// is what the sim's configuration implies (one for each job whose
	// first attempt exits 29 or is preempted).
	Recoveries, WantRecoveries int
	Usage                      Usage // the controller's, just before it stopped
	// Submit is how long storing every job took; AllRunning is from the
	// last submit until the last job first ran.
	Submit, AllRunning time.Duration
	// Decisions are, for every attempt that ended and was followed by
	// another, the time from the controller being told of the end to its
	// asking for the next attempt, as the sim recorded them.
	Decisions []time.Duration
	Wall      time.Duration // from the first submit until every job ended
}

// simTask is the task every job runs: it restarts on exit code 29.
const simTask = `name: bench
resources:
  cloud: sim
  job_recovery:
    strategy: EAGER_NEXT_REGION
    recover_on_exit_codes: [29]
run: python train.py
`

// simTaskAllOn is simTask with every failure verdict on: a failure is run
// again elsewhere before it counts, and three restarts without progress
// end the job. The quarantine needs no task setting.
const simTaskAllOn = `name: bench
resources:
  cloud: sim
  job_recovery:
    strategy: EAGER_NEXT_REGION
    recover_on_exit_codes: [29]
    confirm_failures: 1
    max_restarts_without_progress: 3
run: python train.py
`

// simTaskPriced is simTask with a budget it never reaches.
const simTaskPriced = `name: bench
resources:
  cloud: sim
  job_recovery:
    strategy: EAGER_NEXT_REGION
    recover_on_exit_codes: [29]
    max_cost: 1000000
run: python train.py
`

// simConfig is the controller's config.yaml for a sim run. Restart
// back-off is 1ms, so that the decision latency is the controller's own
// and not the wait a user configures.
func (o SimOptions) simConfig() string {
	poll := ""
	if o.PollInterval > 0 {
		poll = fmt.Sprintf("  poll_interval: %s\n", o.PollInterval)
	}
	prices := ""
	if o.Prices {
		prices = "  prices: {node_hour: 0.5}\n"
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
  decision_log: sim/decisions.log
%s`, poll, o.RunTime, o.ExitShare, o.PreemptShare, o.Seed, prices)
}

// SimConfig is the sim provider's configuration the run gives the
// controller, for working out what the run should end with.
func (o SimOptions) SimConfig() sim.Config {
	return sim.Config{RunTime: o.RunTime, ExitCodes: []sim.ExitRule{{Code: 29, Share: o.ExitShare, Attempt: 1}},
		PreemptRate: o.PreemptShare, PreemptAttempts: 1, Seed: o.Seed}
}

// RunSim submits every job at once to a controller of its own and waits
// for all of them to end.
func RunSim(ctx context.Context, o SimOptions) (*SimResult, error) {
	task := simTask
	if o.AllOn {
		task = simTaskAllOn
	}
	if o.Prices {
		task = simTaskPriced
	}
	h, err := openHome(ctx, o.Bin, o.Home, o.simConfig(), task)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	d, db, file := h.daemon, h.db, h.task

	fmt.Fprintf(o.Progress, "sim: submitting %d jobs (run time %s)\n", o.Jobs, o.RunTime)
	t0 := time.Now()
	ids, lastSubmit, err := submit(ctx, d, file, o.Jobs, 1000, o.Progress)
	if err != nil {
		return nil, err
	}
	r := &SimResult{Jobs: o.Jobs, Submit: lastSubmit.Sub(t0)}
	fmt.Fprintf(o.Progress, "sim: submitted in %s; waiting for every job to end\n", r.Submit.Round(time.Millisecond))
	r.Statuses, err = waitAll(ctx, db, o.Jobs, time.Second, o.Timeout, 15*time.Second, o.Progress)
	if err != nil {
		return r, err
	}
	r.Wall = time.Since(t0)
	if r.Usage, err = ReadUsage(d.Pid); err != nil {
		return r, err
	}
	if err := d.Stop(time.Minute); err != nil {
		return r, err
	}
	lastRunning, n, err := latest(ctx, db, "started_at")
	if err != nil {
		return r, err
	}
	if n != o.Jobs {
		return r, fmt.Errorf("%d of %d jobs ever ran", n, o.Jobs)
	}
	r.AllRunning = lastRunning.Sub(lastSubmit)
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(SUM(recovery_count), 0) FROM jobs`).Scan(&r.Recoveries); err != nil {
		return r, err
	}
	cfg := o.SimConfig()
	for _, id := range ids {
		if cfg.Preempts(provision.ClusterName(id, 0, 1), 1) || cfg.ExitCode(id, 0, 1) != 0 {
			r.WantRecoveries++
		}
	}
	ds, err := sim.ReadDecisions(filepath.Join(o.Home, "sim", "decisions.log"))
	if err != nil && r.WantRecoveries > 0 {
		return r, err
	}
	for _, dd := range ds {
		r.Decisions = append(r.Decisions, dd.Latency())
	}
	return r, nil
}
