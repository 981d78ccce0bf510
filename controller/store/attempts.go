package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// Task is one task (pipeline stage) of a job, with its persisted counters.
type Task struct {
	JobID            int64
	Idx              int
	Name             string
	Status           lifecycle.Status
	RecoveryCount    int
	RestartsOnErrors int
	LaunchRound      int
	PreemptedIn      string // JSON placement of the last preemption, "" if none
	InputKey         string
	StartedAt        *time.Time
	EndedAt          *time.Time
	// Linked is the task of another job whose run this one reuses (a retry
	// from a pipeline's failed task); nil for a task that runs.
	Linked *TaskRef
	// Size is what an escalation chose for the task's next attempts; nil
	// until one did (the task's own resources).
	Size *strategy.Size
}

// Attempt is one launch of a task on a cluster.
type Attempt struct {
	ID          int64
	JobID       int64
	TaskIdx     int
	Attempt     int // 1-based, per task
	Cluster     string
	Cloud       string
	Region      string
	Zone        string
	InstanceIDs []string
	State       lifecycle.AttemptState
	Outcome     string
	ExitCodes   []*int
	Reason      string
	Action      string
	Decision    string
	Unreachable int
	// Size is what the attempt asked for when an escalation chose it; nil
	// for the task's own resources.
	Size      *strategy.Size
	StartedAt time.Time
	EndedAt   *time.Time
	// KeptUntil is set when the attempt's job failed and its cluster is
	// kept (job_recovery.keep_on_failure) until then.
	KeptUntil *time.Time
	// ReleaseRequested, when not "", is why a user asked for the kept
	// cluster to go now (strategy.ReleasedByUser, ReleasedByCancel).
	ReleaseRequested string
	// ReleasedAt and ReleasedReason say when and why a kept cluster was
	// torn down.
	ReleasedAt     *time.Time
	ReleasedReason string
	// Notice is the preemption notice heard on the attempt's nodes (or
	// given to them, on local), nil when none.
	Notice *Notice
	// ReplacedAt is when the replacement of an attempt with a notice that
	// ends its node was asked for; nil while it was not. A replaced attempt
	// stays open until its node goes, but the job has moved on.
	ReplacedAt *time.Time
	// NodeKey is the attempt's random key (NodeKeySize bytes), made with
	// it: each node's agent gets a key derived from it at start and tags
	// its exit code record with it, so that the controller takes no record
	// the task wrote. nil for an attempt stored before keys.
	NodeKey []byte
	// RunAt is when the run step was first seen going on every node, after
	// setup; nil until then.
	RunAt *time.Time
	// Progress is the highest progress the attempt's nodes reported
	// (RecordProgress); nil while none did.
	Progress *int64
	// OnDemand says the attempt launches on-demand whatever its task asks
	// for: an earlier decision switched the task (strategy.Decision's
	// OnDemand, job_recovery.on_demand_after).
	OnDemand bool
	// Billing is how the attempt's cluster is billed (SetPlacement); its
	// From is nil until a launch was requested.
	Billing Billing
	// Cost is what the attempt cost, written when it ended; nil while it
	// runs, or when no price of it was known.
	Cost *Cost
	// InstanceType is the instance type the attempt asked for ("" when it
	// asked by CPUs and memory); Host the Kubernetes node all its nodes
	// ran on ("" elsewhere, or when they ran on several).
	InstanceType, Host string
	// Checkpoint is the newest object of the task's MOUNT_CACHED buckets
	// when the attempt ended (RecordCheckpoint); nil when none was seen.
	Checkpoint *strategy.Checkpoint
}

// Billing is how an attempt's cluster is billed: from when its launch was
// requested, for which instance type, spot or not, how many nodes, with
// which minimum billed time per instance, at what price per node-hour at
// launch (nil when no price was known).
type Billing struct {
	From         *time.Time
	InstanceType string
	Spot         bool
	Nodes        int
	Minimum      time.Duration
	PerHour      *float64
}

// Cost is a sum of money in dollars, and whether it is an estimate (a
// price was stale or not known for the whole time, or the time is not
// over).
type Cost struct {
	Dollars  float64
	Estimate bool
}

// NodeKeySize is the size of an attempt's NodeKey.
const NodeKeySize = 32

// Notice is a preemption notice, as stored with its attempt.
type Notice struct {
	Kind   string // spot-interruption, rebalance, preempted
	Source string // aws-imds, gce-metadata, local
	At     time.Time
	// Deadline is when the cloud takes the node; nil when the notice names
	// none (a rebalance recommendation).
	Deadline *time.Time
}

// Tasks returns a job's tasks in order.
func (s *Store) Tasks(ctx context.Context, jobID int64) ([]*Task, error) {
	return queryAll(ctx, s.db, scanTask, `SELECT job_id, idx, name, status, recovery_count, restarts_on_errors,
		launch_round, preempted_in, input_key, started_at, ended_at, linked_job, linked_task, size FROM tasks WHERE job_id = ? ORDER BY idx`, jobID)
}

func scanTask(rows *sql.Rows) (*Task, error) {
	var t Task
	var pre, key, started, ended, size sql.NullString
	var linkJob, linkTask sql.NullInt64
	if err := rows.Scan(&t.JobID, &t.Idx, &t.Name, &t.Status, &t.RecoveryCount, &t.RestartsOnErrors,
		&t.LaunchRound, &pre, &key, &started, &ended, &linkJob, &linkTask, &size); err != nil {
		return nil, err
	}
	var err error
	if t.Size, err = readSize(size); err != nil {
		return nil, fmt.Errorf("job %d task %d size: %w", t.JobID, t.Idx, err)
	}
	if linkJob.Valid {
		t.Linked = &TaskRef{Job: linkJob.Int64, Task: int(linkTask.Int64)}
	}
	t.PreemptedIn, t.InputKey = pre.String, key.String
	t.StartedAt, t.EndedAt = parseTime(started), parseTime(ended)
	return &t, nil
}

const attemptColumns = `id, job_id, task_idx, attempt, cluster, cloud, region, zone, instance_ids, state,
	outcome, exit_codes, reason, action, decision, unreachable, started_at, ended_at, size,
	kept_until, release_requested, released_at, released_reason,
	notice_kind, notice_source, notice_at, notice_deadline, replaced_at, node_key, run_at, progress,
	billed_from, billed_type, spot, nodes, min_seconds, price_per_hour, cost, cost_estimate, on_demand,
	instance_type, host, checkpoint, checkpoint_at`

// Attempts returns a job's attempts, task by task, in order.
func (s *Store) Attempts(ctx context.Context, jobID int64) ([]*Attempt, error) {
	return findAttempts(ctx, s.db, `WHERE job_id = ? ORDER BY task_idx, attempt`, jobID)
}

// OpenAttempts returns every attempt that has not ended, across all jobs.
func (s *Store) OpenAttempts(ctx context.Context) ([]*Attempt, error) {
	return findAttempts(ctx, s.db, `WHERE `+openSQL+` ORDER BY id`)
}

// LastAttempt returns the newest attempt of a job's task, or nil.
func (s *Store) LastAttempt(ctx context.Context, jobID int64, task int) (*Attempt, error) {
	as, err := findAttempts(ctx, s.db, `WHERE job_id = ? AND task_idx = ? ORDER BY attempt DESC LIMIT 1`, jobID, task)
	if err != nil || len(as) == 0 {
		return nil, err
	}
	return as[0], nil
}

func findAttempts(ctx context.Context, q querier, tail string, args ...any) ([]*Attempt, error) {
	return queryAll(ctx, q, scanAttempt, `SELECT `+attemptColumns+` FROM attempts `+tail, args...)
}

func scanAttempt(rows *sql.Rows) (*Attempt, error) {
	var a Attempt
	var ids, outcome, codes, ended, size, kept, released sql.NullString
	var nKind, nSource, nAt, nDeadline, replaced, nodeKey, runAt sql.NullString
	var progress, minSeconds sql.NullInt64
	var billed sql.NullString
	var perHour, cost sql.NullFloat64
	var costEstimate bool
	var ckpt, ckptAt sql.NullString
	var started string
	var onDemand int
	if err := rows.Scan(&a.ID, &a.JobID, &a.TaskIdx, &a.Attempt, &a.Cluster, &a.Cloud, &a.Region, &a.Zone,
		&ids, &a.State, &outcome, &codes, &a.Reason, &a.Action, &a.Decision, &a.Unreachable, &started, &ended, &size,
		&kept, &a.ReleaseRequested, &released, &a.ReleasedReason,
		&nKind, &nSource, &nAt, &nDeadline, &replaced, &nodeKey, &runAt, &progress,
		&billed, &a.Billing.InstanceType, &a.Billing.Spot, &a.Billing.Nodes, &minSeconds, &perHour, &cost, &costEstimate, &onDemand,
		&a.InstanceType, &a.Host, &ckpt, &ckptAt); err != nil {
		return nil, err
	}
	a.OnDemand = onDemand != 0
	a.Billing.From = parseTime(billed)
	a.Billing.Minimum = time.Duration(minSeconds.Int64) * time.Second
	if perHour.Valid {
		a.Billing.PerHour = &perHour.Float64
	}
	if cost.Valid {
		a.Cost = &Cost{Dollars: cost.Float64, Estimate: costEstimate}
	}
	var err error
	if a.Size, err = readSize(size); err != nil {
		return nil, fmt.Errorf("attempt %d size: %w", a.ID, err)
	}
	if nKind.Valid {
		a.Notice = &Notice{Kind: nKind.String, Source: nSource.String, Deadline: parseTime(nDeadline)}
		if t := parseTime(nAt); t != nil {
			a.Notice.At = *t
		}
	}
	a.ReplacedAt = parseTime(replaced)
	a.RunAt = parseTime(runAt)
	if progress.Valid {
		a.Progress = &progress.Int64
	}
	if at := parseTime(ckptAt); ckpt.Valid && at != nil {
		a.Checkpoint = &strategy.Checkpoint{Key: ckpt.String, Modified: *at}
	}
	if nodeKey.Valid {
		if a.NodeKey, err = hex.DecodeString(nodeKey.String); err != nil || len(a.NodeKey) != NodeKeySize {
			return nil, fmt.Errorf("attempt %d node_key: not %d bytes in hex", a.ID, NodeKeySize)
		}
	}
	if ids.Valid {
		if err := json.Unmarshal([]byte(ids.String), &a.InstanceIDs); err != nil {
			return nil, fmt.Errorf("attempt %d instance_ids: %w", a.ID, err)
		}
	}
	if codes.Valid {
		if err := json.Unmarshal([]byte(codes.String), &a.ExitCodes); err != nil {
			return nil, fmt.Errorf("attempt %d exit_codes: %w", a.ID, err)
		}
	}
	a.Outcome = outcome.String
	if t := parseTime(sql.NullString{String: started, Valid: true}); t != nil {
		a.StartedAt = *t
	}
	a.EndedAt = parseTime(ended)
	a.KeptUntil, a.ReleasedAt = parseTime(kept), parseTime(released)
	return &a, nil
}

// NewAttempt starts the next attempt of the job's current task and sets the
// job's and the task's status (STARTING, or RECOVERING after a recovery).
// With reuse set, the attempt runs on that ended attempt's cluster and
// starts in state "starting"; otherwise it is "launching" on a new cluster
// named by clusterName(attempt number).
func (s *Store) NewAttempt(ctx context.Context, jobID int64, task int, clusterName func(attempt int) string, reuse *Attempt, jobStatus lifecycle.Status) (*Attempt, error) {
	var out *Attempt
	err := s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockJob(ctx, tx, jobID); err != nil {
			return err
		}
		j, err := readJob(ctx, tx, jobID)
		if err != nil {
			return err
		}
		open, err := openAttempt(ctx, tx, jobID)
		if err != nil {
			return err
		}
		t, err := readTask(ctx, tx, jobID, task)
		if err != nil {
			return err
		}
		c, err := lifecycle.NewAttempt(j.Job, open, t, jobStatus, reuse != nil)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(attempt), 0) FROM attempts WHERE job_id = ? AND task_idx = ?`, jobID, task).Scan(&n); err != nil {
			return err
		}
		now := s.now()
		a := &Attempt{JobID: jobID, TaskIdx: task, Attempt: n + 1, State: c.Attempt, StartedAt: now, NodeKey: make([]byte, NodeKeySize)}
		if _, err := rand.Read(a.NodeKey); err != nil {
			return err
		}
		a.Cluster = clusterName(a.Attempt)
		if reuse != nil {
			a.Cluster, a.Cloud, a.Region, a.Zone, a.InstanceIDs = reuse.Cluster, reuse.Cloud, reuse.Region, reuse.Zone, reuse.InstanceIDs
			// The reused cluster has been billed since the attempt before
			// it ended, and no minimum is charged again.
			a.Billing = reuse.Billing
			a.Billing.From, a.Billing.Minimum = reuse.EndedAt, 0
			a.InstanceType, a.Host = reuse.InstanceType, reuse.Host
		}
		ids, _ := json.Marshal(a.InstanceIDs)
		// The attempt asks for the size the last escalation chose, and
		// on-demand once a decision switched the task.
		var size sql.NullString
		var onDemand int
		if err := tx.QueryRowContext(ctx, `SELECT size, on_demand FROM tasks WHERE job_id = ? AND idx = ?`, jobID, task).Scan(&size, &onDemand); err != nil {
			return err
		}
		a.OnDemand = onDemand != 0
		if a.Size, err = readSize(size); err != nil {
			return fmt.Errorf("job %d task %d size: %w", jobID, task, err)
		}
		if a.ID, err = insertID(ctx, tx, `INSERT INTO attempts (job_id, task_idx, attempt, cluster, cloud, region, zone, instance_ids, state, started_at, size, node_key, instance_type, host, on_demand)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, jobID, task, a.Attempt, a.Cluster, a.Cloud, a.Region, a.Zone, string(ids), a.State, fmtTime(now), size, hex.EncodeToString(a.NodeKey),
			a.InstanceType, a.Host, onDemand); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, started_at = COALESCE(started_at, ?) WHERE job_id = ? AND idx = ?`,
			c.Task, fmtTime(now), jobID, task); err != nil {
			return err
		}
		if reuse != nil && a.Billing.From != nil {
			if err := writeBilling(ctx, tx, a.ID, a.Billing); err != nil {
				return err
			}
			if err := startBilling(ctx, tx, jobID, a.Billing); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = '', next_action_at = NULL WHERE id = ?`, c.Job, jobID); err != nil {
			return err
		}
		out = a
		return nil
	})
	return out, err
}

// SetHost records the Kubernetes node every node of a launched attempt
// runs on (provision.Node.Host), for quarantine.
func (s *Store) SetHost(ctx context.Context, attemptID int64, host string) error {
	return s.exec(ctx, `UPDATE attempts SET host = ? WHERE id = ? AND `+openSQL, host, attemptID)
}

// RecordCheckpoint keeps the newest object of an attempt's MOUNT_CACHED
// buckets seen when it ended.
func (s *Store) RecordCheckpoint(ctx context.Context, attemptID int64, c strategy.Checkpoint) error {
	return s.exec(ctx, `UPDATE attempts SET checkpoint = ?, checkpoint_at = ? WHERE id = ?`, c.Key, fmtTime(c.Modified), attemptID)
}

// SetPlacement records where an attempt is being launched and how its
// cluster will be billed, before the cloud is asked, so that a restarted
// controller looks for its cluster there and the request of the launch
// that succeeds is the one billed. instanceType is the instance type it
// asks for there ("" when the provider picks one by CPUs and memory).
func (s *Store) SetPlacement(ctx context.Context, attemptID int64, cloud, region, zone, instanceType string, b Billing) error {
	return s.exec(ctx, `UPDATE attempts SET cloud = ?, region = ?, zone = ?,
		instance_type = ?, host = '',
		billed_from = ?, billed_type = ?, spot = ?, nodes = ?, min_seconds = ?, price_per_hour = ?
		WHERE id = ? AND `+openSQL, cloud, region, zone, instanceType,
		fmtTimePtr(b.From), b.InstanceType, boolInt(b.Spot), b.Nodes, int64(b.Minimum/time.Second), b.PerHour, attemptID)
}

func writeBilling(ctx context.Context, tx *dbTx, attemptID int64, b Billing) error {
	_, err := tx.ExecContext(ctx, `UPDATE attempts SET billed_from = ?, billed_type = ?, spot = ?, nodes = ?, min_seconds = ?, price_per_hour = ?
		WHERE id = ? AND `+openSQL, fmtTimePtr(b.From), b.InstanceType, boolInt(b.Spot), b.Nodes, int64(b.Minimum/time.Second), b.PerHour, attemptID)
	return err
}

// startBilling shows on the job that one of its attempts' clusters is up
// and billed from b.From, at b.PerHour per node (unknown when nil).
func startBilling(ctx context.Context, tx *dbTx, jobID int64, b Billing) error {
	var rate any
	if b.PerHour != nil {
		rate = *b.PerHour * float64(max(b.Nodes, 1))
	}
	_, err := tx.ExecContext(ctx, `UPDATE jobs SET cost_rate = ?, cost_since = ? WHERE id = ?`, rate, fmtTimePtr(b.From), jobID)
	return err
}

// addCost adds what an ended attempt cost to its job's sum, in the
// transaction that ends it. A nil cost (no price known) of an attempt
// that had instances makes the job's sum an estimate; stop clears the
// billing shown on the job (the attempt was its running one).
func addCost(ctx context.Context, tx *dbTx, jobID, attemptID int64, c *Cost, billed, stop bool) error {
	if c != nil {
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET cost = ?, cost_estimate = ? WHERE id = ?`, c.Dollars, boolInt(c.Estimate), attemptID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET cost = COALESCE(cost, 0) + ?, cost_estimate = CASE WHEN ? = 1 THEN 1 ELSE cost_estimate END WHERE id = ?`,
			c.Dollars, boolInt(c.Estimate), jobID); err != nil {
			return err
		}
	} else if billed {
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET cost_estimate = 1 WHERE id = ?`, jobID); err != nil {
			return err
		}
	}
	if stop {
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET cost_rate = NULL, cost_since = NULL WHERE id = ?`, jobID)
		return err
	}
	return nil
}

// MarkLaunched records an attempt's cluster as up (the attempt is
// starting): its nodes' instance ids.
func (s *Store) MarkLaunched(ctx context.Context, attemptID int64, cloud, region, zone string, instanceIDs []string) error {
	ids, _ := json.Marshal(instanceIDs)
	return s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockAttemptJob(ctx, tx, attemptID); err != nil {
			return err
		}
		a, err := readAttempt(ctx, tx, attemptID)
		if err != nil {
			return err
		}
		c, err := lifecycle.Launched(a.Attempt)
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, `UPDATE attempts SET state = ?, cloud = ?, region = ?, zone = ?, instance_ids = ? WHERE id = ?`,
			c.Attempt, cloud, region, zone, string(ids), attemptID); err != nil {
			return err
		}
		// From now on the job shows what its cluster costs so far.
		var from sql.NullString
		var b Billing
		var perHour sql.NullFloat64
		if err := tx.QueryRowContext(ctx, `SELECT billed_from, nodes, price_per_hour FROM attempts WHERE id = ?`, attemptID).
			Scan(&from, &b.Nodes, &perHour); err != nil {
			return err
		}
		if b.From = parseTime(from); b.From == nil {
			return nil
		}
		if perHour.Valid {
			b.PerHour = &perHour.Float64
		}
		return startBilling(ctx, tx, a.Job, b)
	})
}

// MarkRunning records that the task runs on every node of the attempt and
// the job is RUNNING; a job being cancelled stays CANCELLING.
func (s *Store) MarkRunning(ctx context.Context, at *Attempt) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockAttemptJob(ctx, tx, at.ID); err != nil {
			return err
		}
		a, err := readAttempt(ctx, tx, at.ID)
		if err != nil {
			return err
		}
		t, err := readTask(ctx, tx, a.Job, a.Task)
		if err != nil {
			return err
		}
		j, err := readJob(ctx, tx, a.Job)
		if err != nil {
			return err
		}
		c, err := lifecycle.TaskRunning(j.Job, t, a.Attempt)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET state = ? WHERE id = ?`, c.Attempt, at.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ? WHERE job_id = ? AND idx = ?`, c.Task, a.Job, a.Task); err != nil {
			return err
		}
		if c.Job == "" {
			return nil // a job being cancelled stays as it is
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = '', started_at = COALESCE(started_at, ?) WHERE id = ?`,
			c.Job, fmtTime(s.now()), a.Job)
		return err
	})
}

// MarkRunStarted records that the run step goes on every node of a
// running attempt (its setup is over), once.
func (s *Store) MarkRunStarted(ctx context.Context, attemptID int64) error {
	return s.exec(ctx, `UPDATE attempts SET run_at = ? WHERE id = ? AND run_at IS NULL AND state = ?`,
		fmtTime(s.now()), attemptID, lifecycle.AttemptRunning)
}

// RecordProgress keeps n as the attempt's progress when it is above the
// progress stored (or none is); it reports whether it was.
func (s *Store) RecordProgress(ctx context.Context, attemptID int64, n int64) (bool, error) {
	res, err := s.execResult(ctx, `UPDATE attempts SET progress = ? WHERE id = ? AND (progress IS NULL OR progress < ?)`,
		n, attemptID, n)
	if err != nil {
		return false, err
	}
	k, err := res.RowsAffected()
	return k > 0, err
}

// SetUnreachable records how many checks of a running attempt's nodes failed
// in a row, and shows why on the job.
func (s *Store) SetUnreachable(ctx context.Context, a *Attempt, n int, reason string) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockJob(ctx, tx, a.JobID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE attempts SET unreachable = ? WHERE id = ?`, n, a.ID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET status_reason = ? WHERE id = ? AND status NOT IN `+terminalSQL, reason, a.JobID)
		return err
	})
}

// SetStatusReason shows what a job in flight waits for (a launch waiting
// for SSH) as its status reason; a job that has ended or is being
// cancelled keeps its own.
func (s *Store) SetStatusReason(ctx context.Context, jobID int64, reason string) error {
	return s.exec(ctx, `UPDATE jobs SET status_reason = ? WHERE id = ? AND cancel_requested = 0 AND status NOT IN `+terminalSQL, reason, jobID)
}

// SetWaiting makes a job PENDING while no placement has capacity, with a
// reason shown to the user and the time of its next round of launch tries.
// It fails with ErrTerminal when the job has ended, and with
// ErrCancelRequested when it is being cancelled.
func (s *Store) SetWaiting(ctx context.Context, jobID int64, task int, reason string, next *time.Time, launchRound int) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockJob(ctx, tx, jobID); err != nil {
			return err
		}
		j, err := readJob(ctx, tx, jobID)
		if err != nil {
			return err
		}
		c, err := lifecycle.Waiting(j.Job)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET launch_round = ? WHERE job_id = ? AND idx = ?`, launchRound, jobID, task); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = ?, status_reason = ?, next_action_at = ? WHERE id = ?`,
			c.Job, reason, fmtTimePtr(next), jobID)
		return err
	})
}

// Clouds lists every cloud any attempt has used, so a restarted controller
// knows where to look for clusters it may have left behind.
func (s *Store) Clouds(ctx context.Context) ([]string, error) {
	return queryAll(ctx, s.db, column[string], `SELECT DISTINCT cloud FROM attempts WHERE cloud <> ''`)
}

// ErrOpenAttempt is returned when a change needs the job to have no
// attempt running, and it has one: a job never has two live attempts.
var ErrOpenAttempt = lifecycle.ErrOpenAttempt

// ErrCancelRequested is returned when a new attempt, or a wait for
// capacity, is asked for a job being cancelled.
var ErrCancelRequested = lifecycle.ErrCancelRequested

// LiveClusters names the clusters that must not be torn down at now:
// those of attempts that have not ended, those kept for a restart (the
// last attempt of an unfinished job ended asking to restart on its
// cluster), and those kept after a failure (keep_on_failure) whose time
// has not come and that no user asked to release.
func (s *Store) LiveClusters(ctx context.Context, now time.Time) (map[string]bool, error) {
	names, err := queryAll(ctx, s.db, column[string], `SELECT cluster FROM attempts WHERE `+openSQL+`
		UNION
		SELECT a.cluster FROM attempts a JOIN jobs j ON j.id = a.job_id
		WHERE j.`+activeSQL+` AND a.action = '`+string(strategy.Restart)+`' AND a.task_idx = j.current_task
			AND a.attempt = (SELECT MAX(attempt) FROM attempts b WHERE b.job_id = a.job_id AND b.task_idx = a.task_idx)`)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, name := range names {
		live[name] = true
	}
	kept, err := s.KeptAttempts(ctx)
	if err != nil {
		return nil, err
	}
	for _, a := range kept {
		// Compared here, not in SQL: stored times are RFC 3339 with
		// trailing zeros of the fraction dropped, which do not sort as text.
		if a.ReleaseRequested == "" && now.Before(*a.KeptUntil) {
			live[a.Cluster] = true
		}
	}
	return live, nil
}

// keptSQL selects attempts whose cluster is kept after a failure and not
// yet released; the attempts_kept index covers it.
const keptSQL = "kept_until IS NOT NULL AND released_at IS NULL"

// KeptAttempts returns the attempts whose cluster is kept after their
// job failed (keep_on_failure) and has not been released yet, oldest first.
func (s *Store) KeptAttempts(ctx context.Context) ([]*Attempt, error) {
	return findAttempts(ctx, s.db, `WHERE `+keptSQL+` ORDER BY id`)
}

// ErrNotKept is returned for a job whose cluster was not kept: it did not
// fail, or asked for no keep_on_failure.
var ErrNotKept = errors.New("its cluster was not kept")

// ErrReleased is returned for a job whose kept cluster is already
// released.
var ErrReleased = errors.New("its kept cluster was already released")

// KeptAttempt returns the attempt of job jobID whose cluster was kept
// after the job failed, released or not; ErrNotKept when there is none.
func (s *Store) KeptAttempt(ctx context.Context, jobID int64) (*Attempt, error) {
	as, err := findAttempts(ctx, s.db, `WHERE job_id = ? AND kept_until IS NOT NULL ORDER BY id DESC LIMIT 1`, jobID)
	if err != nil {
		return nil, err
	}
	if len(as) == 0 {
		return nil, fmt.Errorf("job %d: %w", jobID, ErrNotKept)
	}
	return as[0], nil
}

// RequestRelease asks for job jobID's kept cluster to be torn down now,
// for why (strategy.ReleasedByUser, ReleasedByCancel); the controller does
// it. It returns the kept attempt, and fails with ErrNotKept when the job
// kept none and ErrReleased when it is already released. Asking twice is
// no error: the first reason stays.
func (s *Store) RequestRelease(ctx context.Context, jobID int64, why string) (*Attempt, error) {
	var a *Attempt
	err := s.tx(ctx, func(tx *dbTx) error {
		if err := s.d.lockJob(ctx, tx, jobID); err != nil {
			return err
		}
		as, err := findAttempts(ctx, tx, `WHERE job_id = ? AND kept_until IS NOT NULL ORDER BY id DESC LIMIT 1`, jobID)
		if err != nil {
			return err
		}
		if len(as) == 0 {
			return fmt.Errorf("job %d: %w", jobID, ErrNotKept)
		}
		a = as[0]
		if a.ReleasedAt != nil {
			return fmt.Errorf("job %d: %w", jobID, ErrReleased)
		}
		if a.ReleaseRequested != "" {
			return nil
		}
		a.ReleaseRequested = why
		_, err = tx.ExecContext(ctx, `UPDATE attempts SET release_requested = ? WHERE id = ?`, why, a.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

// MarkReleased records that attempt id's kept cluster is released, for
// reason, before the controller tears it down: once released, the orphan
// sweep reaps what a teardown cut short leaves. It says whether it marked
// it (false: released already).
func (s *Store) MarkReleased(ctx context.Context, id int64, reason string) (bool, error) {
	var n int64
	err := s.tx(ctx, func(tx *dbTx) error {
		res, err := tx.ExecContext(ctx, `UPDATE attempts SET released_at = ?, released_reason = ? WHERE id = ? AND `+keptSQL,
			fmtTime(s.now()), reason, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

// readSize reads a size column: NULL is nil, the task's own resources.
func readSize(s sql.NullString) (*strategy.Size, error) {
	if !s.Valid || s.String == "" {
		return nil, nil
	}
	var size strategy.Size
	if err := json.Unmarshal([]byte(s.String), &size); err != nil {
		return nil, err
	}
	return &size, nil
}

// sizeColumn writes a size for a size column; nil is NULL.
func sizeColumn(s *strategy.Size) any {
	if s == nil {
		return nil
	}
	b, _ := json.Marshal(s)
	return string(b)
}
