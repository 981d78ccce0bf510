package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	sortiehome "sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
)

// QueueOptions is a store of many jobs and the queue views timed on it.
type QueueOptions struct {
	Bin      string
	Home     string
	Jobs     int // jobs in the store
	Running  int // how many of them are RUNNING; the rest have ended
	Runs     int // timed runs of each view; the median is reported
	Progress io.Writer
	// Costs gives every job a cost, as the controller stores them: the
	// ended jobs' sums, and the running ones' price per hour since their
	// start.
	Costs bool
}

// QueueResult is the median time of each view and what they printed.
type QueueResult struct {
	Status, Default          time.Duration
	StatusJobs, DefaultLines int
	StatusRuns, DefaultRuns  []time.Duration
}

const queueTask = `name: train
resources:
  cloud: aws
  region: us-east-1
  use_spot: true
  accelerators: A100:1
  job_recovery:
    strategy: EAGER_NEXT_REGION
    max_restarts_on_errors: 2
    recover_on_exit_codes: [29, 137]
envs: {EPOCHS: "10"}
run: python train.py --epochs $EPOCHS
`

// BuildQueueStore fills a fresh store at home with o.Jobs jobs, each with a
// task and an attempt, in one transaction: the newest jobs are RUNNING
// (one in two of the last 2*o.Running), the others ended, most of them
// SUCCEEDED. The store's own migrations make the schema.
func BuildQueueStore(ctx context.Context, o QueueOptions) error {
	if err := os.MkdirAll(o.Home, 0o755); err != nil {
		return err
	}
	// The store's RUNNING jobs make the first queue start the home's
	// controller. It looks at their clusters once as it starts; a poll
	// interval of an hour keeps it from ticking again while the views
	// are timed, so what is timed is the view, not the view beside a
	// controller polling 10,000 jobs.
	if err := os.WriteFile(filepath.Join(o.Home, "config.yaml"), []byte("controller:\n  poll_interval: 1h\n"), 0o644); err != nil {
		return err
	}
	st, err := store.Open(ctx, sortiehome.State(o.Home), nil)
	if err != nil {
		return err
	}
	st.Close()
	p, err := schema.Parse([]byte(queueTask), clouds.Schema())
	if err != nil {
		return err
	}
	spec, err := p.WithoutSecretValues().Marshal()
	if err != nil {
		return err
	}
	key, err := schema.PipelineKey(p, o.Home)
	if err != nil {
		return err
	}
	db, err := openDB(o.Home)
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	jobs, err := tx.PrepareContext(ctx, `INSERT INTO jobs (id, name, status, failure_reason, spec, base_dir, num_tasks, input_key,
		recovery_count, exit_codes, root_id, submitted_at, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	tasks, err := tx.PrepareContext(ctx, `INSERT INTO tasks (job_id, idx, name, status, recovery_count, started_at, ended_at) VALUES (?, 0, 'train', ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	attempts, err := tx.PrepareContext(ctx, `INSERT INTO attempts (job_id, task_idx, attempt, cluster, cloud, region, zone, instance_ids, state,
		outcome, exit_codes, reason, action, decision, started_at, ended_at) VALUES (?, 0, 1, ?, 'aws', 'us-east-1', 'us-east-1a', ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	base := time.Now().Add(-time.Duration(o.Jobs) * time.Minute).UTC()
	fmtT := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	firstRunning := o.Jobs - 2*o.Running
	for id := 1; id <= o.Jobs; id++ {
		sub := base.Add(time.Duration(id) * time.Minute)
		start := sub.Add(40 * time.Second)
		status, outcome, codes, state, reason, action := lifecycle.Succeeded, "succeeded", "[0]", lifecycle.AttemptEnded, "every node exited 0", "succeed"
		var failure, ended any = nil, fmtT(start.Add(20 * time.Minute))
		switch {
		case id > firstRunning && id%2 == 0:
			status, outcome, codes, state, reason, action, ended = lifecycle.Running, "", "[]", lifecycle.AttemptRunning, "", "", nil
		case id%25 == 0:
			status, outcome, codes, reason, action = lifecycle.Failed, "user_failure", "[1]", "node 0 exited 1", "fail"
			failure = "restart 3/2 on errors"
		case id%97 == 0:
			status, outcome, codes, reason, action = lifecycle.Cancelled, "cancelled", "[143]", "cancelled by user", "cancel"
		}
		recoveries := 0
		if id%7 == 0 {
			recoveries = 1
		}
		cluster := fmt.Sprintf("sortie-%d-0-1", id)
		var outc, endedCodes any = outcome, codes
		if outcome == "" {
			outc, endedCodes = nil, nil
		}
		if _, err := jobs.ExecContext(ctx, id, fmt.Sprintf("train-%d", id%500), status, failure, string(spec), o.Home, key,
			recoveries, endedCodes, id, fmtT(sub), fmtT(start), ended); err != nil {
			return fmt.Errorf("insert job %d: %w", id, err)
		}
		if _, err := tasks.ExecContext(ctx, id, status, recoveries, fmtT(start), ended); err != nil {
			return fmt.Errorf("insert task of job %d: %w", id, err)
		}
		if _, err := attempts.ExecContext(ctx, id, cluster, fmt.Sprintf(`["i-%012x"]`, id), state, outc, endedCodes, reason, action, reason,
			fmtT(start), ended); err != nil {
			return fmt.Errorf("insert attempt of job %d: %w", id, err)
		}
		if id%20000 == 0 {
			fmt.Fprintf(o.Progress, "queue: %d/%d jobs stored\n", id, o.Jobs)
		}
	}
	if o.Costs {
		for _, q := range []string{
			`UPDATE attempts SET billed_from = started_at, nodes = 1, price_per_hour = 0.42`,
			`UPDATE attempts SET cost = (job_id % 1000) * 0.0137 WHERE ended_at IS NOT NULL`,
			`UPDATE jobs SET cost = (id % 1000) * 0.0137, cost_estimate = (id % 3 = 0) WHERE ended_at IS NOT NULL`,
			`UPDATE jobs SET cost_rate = 0.42, cost_since = started_at WHERE ended_at IS NULL`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("costs: %w", err)
			}
		}
	}
	return tx.Commit()
}

// RunQueue times `jobs queue -o json --status RUNNING` and the default
// `jobs queue` on the store at home, each o.Runs times after one untimed
// run that also checks what they print.
func RunQueue(ctx context.Context, o QueueOptions) (*QueueResult, error) {
	defer stopRevived(o.Bin, o.Home)
	r := &QueueResult{}
	run := func(args ...string) (time.Duration, string, error) {
		return runCLI(ctx, o.Bin, Environ(o.Home), "", args...)
	}
	statusArgs := []string{"jobs", "queue", "-o", "json", "--status", "RUNNING"}
	_, out, err := run(statusArgs...)
	if err != nil {
		return nil, err
	}
	var jobs []contract.JobView
	if err := json.Unmarshal([]byte(out), &jobs); err != nil {
		return nil, fmt.Errorf("queue -o json: %w", err)
	}
	r.StatusJobs = len(jobs)
	_, out, err = run("jobs", "queue")
	if err != nil {
		return nil, err
	}
	r.DefaultLines = strings.Count(out, "\n")
	for i := 0; i < o.Runs; i++ {
		d, _, err := run(statusArgs...)
		if err != nil {
			return nil, err
		}
		r.StatusRuns = append(r.StatusRuns, d)
		if d, _, err = run("jobs", "queue"); err != nil {
			return nil, err
		}
		r.DefaultRuns = append(r.DefaultRuns, d)
	}
	r.Status, r.Default = Median(r.StatusRuns), Median(r.DefaultRuns)
	return r, nil
}

// CostQueueResult is the default queue view timed on a store whose jobs
// have costs (the COST column shown) and on the same store without them.
type CostQueueResult struct {
	With, Without         time.Duration
	WithRuns, WithoutRuns []time.Duration
	// WithCPU and WithoutCPU are the medians of the CLI process's CPU
	// (user and system) in the same runs.
	WithCPU, WithoutCPU time.Duration
}

// RunCostQueue times the default `jobs queue` on the store at priced
// (built with Costs) and at plain (the same jobs, no cost known), one
// beside the other o.Runs times, after an untimed run of each that checks
// that the first shows the COST column and the second does not.
func RunCostQueue(ctx context.Context, o QueueOptions, priced, plain string) (*CostQueueResult, error) {
	defer stopRevived(o.Bin, priced)
	defer stopRevived(o.Bin, plain)
	run := func(home string) (time.Duration, time.Duration, string, error) {
		return runCLICPU(ctx, o.Bin, Environ(home), "", "jobs", "queue")
	}
	_, _, out, err := run(priced)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(out, "COST") || !strings.Contains(out, "~$") {
		return nil, fmt.Errorf("the queue of a store with costs shows none:\n%.2000s", out)
	}
	if _, _, out, err = run(plain); err != nil {
		return nil, err
	}
	if strings.Contains(out, "COST") {
		return nil, fmt.Errorf("the queue of a store without costs shows a COST column")
	}
	r := &CostQueueResult{}
	var withCPU, withoutCPU []time.Duration
	for i := 0; i < o.Runs; i++ {
		d, cpu, _, err := run(priced)
		if err != nil {
			return nil, err
		}
		r.WithRuns, withCPU = append(r.WithRuns, d), append(withCPU, cpu)
		if d, cpu, _, err = run(plain); err != nil {
			return nil, err
		}
		r.WithoutRuns, withoutCPU = append(r.WithoutRuns, d), append(withoutCPU, cpu)
	}
	r.WithCPU, r.WithoutCPU = Median(withCPU), Median(withoutCPU)
	r.With, r.Without = Median(r.WithRuns), Median(r.WithoutRuns)
	return r, nil
}

// stopRevived stops the controller that `jobs queue` started in home: the
// store's RUNNING jobs make the first queue of a home with no controller
// start one (as it would for a user whose controller died), and the bench
// must not leave it behind.
func stopRevived(bin, home string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, _ = runCLI(ctx, bin, Environ(home), "", "controller", "stop")
}
