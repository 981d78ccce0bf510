package storm

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/daemon"
	"sortie/controller/lifecycle"
	"sortie/controller/service"
	"sortie/provision"
	"sortie/provision/sim"
	"sortie/strategy"
)

// Options shape one storm.
type Options struct {
	Bin  string // the sortie CLI; sortie-controller beside it
	Home string // a fresh directory for SORTIE_HOME
	Jobs int
	// Kills are SIGKILLs of the controller, one every KillMin to KillMax.
	Kills            int
	KillMin, KillMax time.Duration
	// Doubles of the restarts after a kill start two controllers at once;
	// Freeze stops the controller with SIGSTOP once while it is busy.
	Doubles int
	Freeze  bool
	Seed    uint64
	// Timeout bounds the wait for every job to end after the last kill.
	Timeout  time.Duration
	Progress io.Writer
	// Limit, when set, holds the sim's running jobs to that many
	// (limits.server.running_jobs) with limits.preemption: lower_priority,
	// and the jobs come at a mix of priorities (priority), so that jobs
	// submitted later at a higher priority preempt admitted ones while
	// the controller is being killed. The run fails if none was.
	Limit int
}

// priority is job i's priority in a storm with a Limit: two fifths at
// 100, two fifths at 500, and a fifth at 900 once a third of the jobs are
// in (500 before), so that the later jobs find the room full of lower ones.
func priority(i, n int) int {
	switch i % 5 {
	case 0, 1:
		return 100
	case 4:
		if i >= n/3 {
			return 900
		}
	}
	return 500
}

// The sim run's task: a listed exit code restarts for free, any other
// failure once from the budget.
const simTask = `name: chaos
resources:
  cloud: sim
  job_recovery:
    strategy: EAGER_NEXT_REGION
    recover_on_exit_codes: [29]
    max_restarts_on_errors: 1
run: python train.py
`

// simConfig: 15% of tasks exit 29 (listed) on their first attempt, 10%
// exit 3 on every attempt (fail after one budgeted restart), 10% exit 1 on
// their first attempt (one budgeted restart, then succeed); 20% of first
// clusters are preempted. Every change to the sim's cloud is saved before
// the call returns: the cloud outlives the controller.
func (o Options) simConfig() sim.Config {
	return sim.Config{
		RunTime: 4 * time.Second,
		ExitCodes: []sim.ExitRule{
			{Code: 29, Share: 0.15, Attempt: 1},
			{Code: 3, Share: 0.10, Attempt: 0},
			{Code: 1, Share: 0.10, Attempt: 1},
		},
		PreemptRate: 0.20, PreemptAttempts: 1, Seed: o.Seed,
	}
}

func (o Options) simYAML() string {
	cfg := o.simConfig()
	rules := ""
	for _, r := range cfg.ExitCodes {
		rules += fmt.Sprintf("{code: %d, share: %g, attempt: %d}, ", r.Code, r.Share, r.Attempt)
	}
	return fmt.Sprintf(`controller:
  poll_interval: 250ms
  restart_backoff_initial: 100ms
  restart_backoff_max: 500ms
sim:
  run_time: %s
  exit_codes: [%s]
  preempt_rate: %g
  preempt_attempts: %d
  seed: %d
  save_every: 0s
`, cfg.RunTime, rules[:len(rules)-2], cfg.PreemptRate, cfg.PreemptAttempts, cfg.Seed) + o.limitsYAML()
}

func (o Options) limitsYAML() string {
	if o.Limit <= 0 {
		return ""
	}
	return fmt.Sprintf("limits:\n  server: {running_jobs: %d}\n  preemption: lower_priority\n", o.Limit)
}

// RunSim runs o.Jobs jobs on the sim provider, submitted over the first
// part of the storm, while the controller is killed o.Kills times.
func RunSim(ctx context.Context, o Options) (*Result, error) {
	r := &Result{Cloud: "sim", Jobs: o.Jobs, Limit: o.Limit}
	if err := os.MkdirAll(filepath.Join(o.Home, "work"), 0o700); err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(o.Home, "config.yaml"), []byte(o.simYAML()), 0o600); err != nil {
		return r, err
	}
	file := filepath.Join(o.Home, "work", "task.yaml")
	if err := os.WriteFile(file, []byte(simTask), 0o600); err != nil {
		return r, err
	}
	x, err := begin(ctx, "sim", o, nil)
	if err != nil {
		return r, err
	}
	defer x.close()
	var prio func(i int) *int
	if o.Limit > 0 {
		prio = func(i int) *int { return new(priority(i, o.Jobs)) }
	}
	subErr := make(chan error, 1)
	go func() { subErr <- submit(ctx, o.Home, file, o.Jobs, submitSpan(o), prio, o.Progress) }()

	if err := storm(ctx, x.c, o, r, nil); err != nil {
		return r, err
	}
	jobs, err := x.settle(ctx, o, r, subErr, strategy.Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{29}})
	if err != nil {
		return r, err
	}
	st, err := sim.ReadState(clouds.SimStatePath(o.Home))
	if err != nil {
		return r, err
	}
	for _, name := range st.Clusters {
		r.problem(&r.Leaked, "sim cluster %s left up", name)
	}
	r.checkSimExpected(jobs, o.simConfig(), st.Starts)
	if o.Limit > 0 && r.PriorityPreempts == 0 {
		return r, fmt.Errorf("no attempt was preempted by priority (limits.server.running_jobs %d, %d jobs): the storm did not exercise preemption", o.Limit, o.Jobs)
	}
	return r, nil
}

// storm kills the controller o.Kills times, KillMin to KillMax apart,
// restarting it each time: o.Doubles of the restarts start two at once,
// and with o.Freeze it is stopped once with SIGSTOP, the CLI's reads
// checked meanwhile. between, when set, runs before each kill (k counts
// from 1): it may preempt a node, fill the disk, or wait for a pause point
// so that the kill lands there.
func storm(ctx context.Context, c *ctl, o Options, r *Result, between func(k int) error) error {
	doubleEvery := 0
	if o.Doubles > 0 {
		doubleEvery = o.Kills / o.Doubles
	}
	freezeAt := o.Kills / 2
	for k := 1; k <= o.Kills; k++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.gap(o.KillMin, o.KillMax)):
		}
		if between != nil {
			if err := between(k); err != nil {
				return err
			}
		}
		if o.Freeze && k == freezeAt && c.cur != nil {
			if err := freeze(ctx, c, o); err != nil {
				return err
			}
			r.Frozen++
		}
		c.kill()
		r.Kills++
		n := 1
		if doubleEvery > 0 && k%doubleEvery == 0 && r.Doubles < o.Doubles {
			n = 2
			r.Doubles++
		}
		if err := c.start(ctx, n); err != nil {
			return fmt.Errorf("restart after kill %d: %w", k, err)
		}
		fmt.Fprintf(o.Progress, "%s: kill %d/%d (%d started at once)\n", filepath.Base(o.Home), k, o.Kills, n)
	}
	return nil
}

// freeze stops the controller with SIGSTOP for two seconds and checks
// that `sortie jobs queue` answers meanwhile: reads never wait on a
// controller.
func freeze(ctx context.Context, c *ctl, o Options) error {
	pid := c.cur.pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(qctx, o.Bin, "jobs", "queue", "-a", "-o", "json")
	cmd.Env = c.env
	t0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("jobs queue while the controller was stopped (SIGSTOP): %v after %s\n%s", err, time.Since(t0).Round(time.Millisecond), tailOf(out, 2000))
	}
	fmt.Fprintf(o.Progress, "%s: controller stopped (SIGSTOP); jobs queue answered in %s\n", filepath.Base(o.Home), time.Since(t0).Round(time.Millisecond))
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	return nil
}

func tailOf(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// submit stores n jobs of file through the service the CLI uses, spread
// over span, nudging whichever controller holds the home. prio, when set,
// gives job i its priority (--priority).
func submit(ctx context.Context, home, file string, n int, span time.Duration, prio func(i int) *int, progress io.Writer) error {
	svc, err := service.Open(ctx, home, clouds.Light())
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.StartDaemon = func(context.Context, string) error { return nil }
	svc.FindDaemon = nil
	const batch = 10
	pause := span / time.Duration(max(n/batch, 1))
	for i := 0; i < n; i++ {
		req := contract.LaunchRequest{File: file, Name: fmt.Sprintf("chaos-%d", i), RetryFailed: true}
		if prio != nil {
			req.Priority = prio(i)
		}
		if _, err := svc.Launch(ctx, req); err != nil {
			return fmt.Errorf("submit job %d of %d: %w", i+1, n, err)
		}
		if (i+1)%batch == 0 || i == n-1 {
			if p := daemon.Running(home); p > 0 {
				_ = syscall.Kill(p, syscall.SIGUSR1)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
		}
	}
	fmt.Fprintf(progress, "%s: submitted %d jobs\n", filepath.Base(home), n)
	return nil
}

// waitEnded waits until n jobs have ended, at most timeout.
func waitEnded(ctx context.Context, db *sql.DB, n int, timeout time.Duration, progress io.Writer) error {
	deadline := time.Now().Add(timeout)
	report := time.Now()
	for {
		var ended int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE status IN (`+terminalList()+`)`).Scan(&ended)
		if err == nil && ended >= n {
			return nil
		}
		if time.Now().After(report) {
			fmt.Fprintf(progress, "  %d of %d jobs ended\n", ended, n)
			report = time.Now().Add(10 * time.Second)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d jobs ended within %s", ended, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func terminalList() string {
	var s []string
	for _, st := range lifecycle.TerminalStatuses() {
		s = append(s, "'"+string(st)+"'")
	}
	return strings.Join(s, ", ")
}

func lifecycleTerminal(s string) bool { return lifecycle.Status(s).Terminal() }

// checkSimExpected replays, for each job, what the sim's configuration
// makes its attempts do (exit codes by job and attempt, preemptions by
// cluster) through the restart rule, and compares it with the store and
// the sim's record of starts.
func (r *Result) checkSimExpected(jobs map[int64]*job, cfg sim.Config, starts map[string]int) {
	policy := strategy.Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{29}}
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		j := jobs[id]
		var c strategy.Counters
		cluster := ""
		var want []attempt
		status := ""
		for n := 1; n <= 30 && status == ""; n++ {
			// got is the store's attempt n, when it has one: whether sortie
			// stopped it for a job of higher priority is the admission's
			// choice, not the sim's, so the plan takes it from the store.
			var got *attempt
			if n <= len(j.Attempts) {
				got = &j.Attempts[n-1]
			}
			fresh := cluster == ""
			if !fresh && r.Limit > 0 && got != nil && got.Cluster == provision.ClusterName(id, 0, n) {
				// Asked to yield between attempts, after a restart: the job
				// went back to wait and its kept cluster was torn down.
				fresh = true
				r.RequeuedBetween++
			}
			if fresh {
				cluster = provision.ClusterName(id, 0, n)
			}
			var e strategy.Ended
			if fresh && cfg.Preempts(cluster, n) {
				e = strategy.Ended{Outcome: strategy.Preempted, ExitCodes: []*int{nil}}
			} else {
				code := cfg.ExitCode(id, 0, n)
				e = strategy.Ended{Outcome: strategy.Succeeded, ExitCodes: []*int{new(code)}}
				if code != 0 {
					e.Outcome = strategy.UserFailure
				}
			}
			if r.Limit > 0 && got != nil && got.Outcome == string(strategy.PreemptedByPriority) {
				// The codes the plan would have are kept in want: a
				// stopped task's own code is one of them if it ended first.
				e.Outcome = strategy.PreemptedByPriority
				r.PriorityPreempts++
			}
			d := strategy.Decide(policy, c, e, true)
			c = d.Counters
			want = append(want, attempt{Attempt: n, Cluster: cluster, Outcome: string(e.Outcome), Codes: e.ExitCodes, Action: string(d.Action)})
			if d.Status.Terminal() {
				status = string(d.Status)
			}
			if d.Action != strategy.Restart {
				cluster = ""
			}
		}
		for i, w := range want {
			if i >= len(j.Attempts) {
				if lifecycleTerminal(j.Status) {
					r.problem(&r.Mismatched, "job %d ended %s after %d attempts; the sim's plan has %d: %s", id, j.Status, len(j.Attempts), len(want), outcomes(want))
				}
				break
			}
			a := j.Attempts[i]
			if a.State != "ended" {
				break // counted as lost already
			}
			if a.Outcome != w.Outcome || a.Cluster != w.Cluster || !codesAgree(a, w) {
				counter := &r.Mismatched
				if a.Outcome == string(strategy.NodeLost) {
					counter = &r.Lost
				}
				r.problem(counter, "job %d attempt %d on %s: %s %s; the sim's plan: %s %s on %s", id, a.Attempt, a.Cluster, a.Outcome, fmtCodes(a.Codes), w.Outcome, fmtCodes(w.Codes), w.Cluster)
				break
			}
			if n := starts[sim.StartKey(id, 0, a.Attempt, 0)]; n > 1 {
				r.problem(&r.Duplicated, "job %d attempt %d: its task started %d times on node 0", id, a.Attempt, n)
			} else if n == 0 && a.Outcome != string(strategy.Preempted) && a.Outcome != string(strategy.PreemptedByPriority) {
				r.problem(&r.Mismatched, "job %d attempt %d: %s %s but the sim never started its task", id, a.Attempt, a.Outcome, fmtCodes(a.Codes))
			}
		}
		if len(j.Attempts) > len(want) {
			r.problem(&r.Mismatched, "job %d: %d attempts; the sim's plan has %d: %s", id, len(j.Attempts), len(want), outcomes(want))
		} else if status != "" && lifecycleTerminal(j.Status) && j.Status != status {
			r.problem(&r.Mismatched, "job %d: %s; the sim's plan ends %s", id, j.Status, status)
		}
	}
}

// codesAgree: a preempted node's code is unknown; any other is the task's.
// A node stopped for a job of higher priority has no code (never started,
// or lost first), 143 (SIGTERM), or the task's own when it ended first.
func codesAgree(got, want attempt) bool {
	if want.Outcome == string(strategy.PreemptedByPriority) {
		for i, c := range got.Codes {
			if c == nil || *c == 143 {
				continue
			}
			if i >= len(want.Codes) || want.Codes[i] == nil || *want.Codes[i] != *c {
				return false
			}
		}
		return true
	}
	if want.Outcome == string(strategy.Preempted) {
		for _, c := range got.Codes {
			if c != nil {
				return false
			}
		}
		return true
	}
	return sameCodes(got.Codes, want.Codes)
}
