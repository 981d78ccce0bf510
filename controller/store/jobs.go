package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// Job is one row of jobs.
type Job struct {
	ID               int64
	Name             string
	Status           lifecycle.Status
	StatusReason     string
	FailureReason    string
	Spec             []byte
	BaseDir          string
	CurrentTask      int
	NumTasks         int
	CancelRequested  bool
	NextActionAt     *time.Time
	InputKey         string
	RecoveryCount    int
	RestartsOnErrors int
	ExitCodes        []*int // the last ended attempt's
	RetriedIn        *int64
	RetryOf          *int64
	RootID           int64
	Trigger          string
	RequestedBy      string
	RetryReason      string
	// Owner launched the job: a server's user, or the OS user of a CLI
	// that launched it without a server.
	Owner string
	// CancelledBy asked for the job's cancel; "" when no one did.
	CancelledBy string
	Overrides   []byte // JSON
	SubmittedAt time.Time
	StartedAt   *time.Time
	EndedAt     *time.Time
	// Size is what an escalation chose for the current task's attempts;
	// nil for the task's own resources.
	Size *strategy.Size
	// Resources are what the current task asks for, the JSON the service
	// wrote (NewTask.Resources); "" for a task stored before they were kept.
	Resources string
	// Placement is where the job's newest placed attempt runs or ran;
	// nil before any attempt was placed.
	Placement *Placement
	// Cost is what the job's ended attempts cost, nil while no price of
	// any is known; CostEstimate says it is an estimate (a stale price, or
	// an attempt whose price was not known).
	Cost         *float64
	CostEstimate bool
	// CostRate is what the cluster of the job's running attempt costs per
	// hour, every node (nil when its price is not known), billed since
	// CostSince; CostSince is nil when no cluster of the job is up.
	CostRate  *float64
	CostSince *time.Time
	// Priority orders the job among waiting jobs, 0-1000, higher first.
	Priority int
	// Ask is what the job holds while it runs, as admission counts it
	// (FormatAsk); "" for a job stored before asks were kept.
	Ask string
	// AdmittedAt is when admission let the job start; nil while it waits
	// under config.yaml's limits, and for a job started without them.
	AdmittedAt *time.Time
	// WaitReason and WaitPlace are why a waiting job waits and its place
	// among the waiting jobs (from 1), as admission last found; "" and 0
	// once admitted.
	WaitReason string
	WaitPlace  int
	// YieldFor is the waiting job of higher priority this job was asked
	// to make room for (preemption): it is being stopped and will wait
	// again; nil when it was not asked. YieldReason is what its attempt's
	// end records.
	YieldFor    *int64
	YieldReason string
}

// CostAt is what the job has cost up to now: its ended attempts' costs,
// and its running attempt's price per hour times the time since its launch
// was requested, which makes it an estimate. It is nil while no price of
// any of them is known.
func (j *Job) CostAt(now time.Time) *Cost {
	var c *Cost
	if j.Cost != nil {
		c = &Cost{Dollars: *j.Cost, Estimate: j.CostEstimate}
	}
	if j.CostSince == nil {
		return c
	}
	if c == nil {
		if j.CostRate == nil {
			return nil
		}
		c = &Cost{}
	}
	c.Estimate = true
	if j.CostRate != nil && now.After(*j.CostSince) {
		c.Dollars += *j.CostRate * now.Sub(*j.CostSince).Hours()
	}
	return c
}

// Placement is where an attempt runs: its cloud, region and zone.
type Placement struct {
	Cloud, Region, Zone string
}

// NewTask is one task of a job being created.
type NewTask struct {
	Name     string
	InputKey string
	// Resources are what the task asks for, as JSON the service writes
	// and reads.
	Resources string
	// Linked, when set, is the run of another job's task this task reuses
	// instead of running: it is stored SUCCEEDED with the link. Linked
	// tasks come first in a pipeline; the job starts at the first other.
	Linked *TaskRef
}

// TaskRef names one task of one job.
type TaskRef struct {
	Job  int64 `json:"job"`
	Task int   `json:"task"`
}

const (
	jobColumns = columnsBeforeSpec + `spec` + columnsAfterSpec
	// listColumns are jobColumns without the spec, which listings never
	// show and which is most of a job's row.
	listColumns = columnsBeforeSpec + `'' AS spec` + columnsAfterSpec

	columnsBeforeSpec = `id, name, status, status_reason, failure_reason, `
	columnsAfterSpec  = `, base_dir, current_task, num_tasks,
	cancel_requested, next_action_at, input_key, recovery_count, restarts_on_errors, exit_codes,
	retried_in, retry_of, root_id, trigger, requested_by, retry_reason, overrides,
	submitted_at, started_at, ended_at, owner, cancelled_by, cost, cost_estimate, cost_rate, cost_since,
	priority, ask, admitted_at, wait_reason, wait_place, yield_for, yield_reason,
	(SELECT size FROM tasks WHERE tasks.job_id = jobs.id AND tasks.idx = jobs.current_task) AS size,
	(SELECT resources FROM tasks WHERE tasks.job_id = jobs.id AND tasks.idx = jobs.current_task) AS resources,
	(SELECT cloud || '/' || region || '/' || zone FROM attempts
		WHERE attempts.job_id = jobs.id AND attempts.cloud <> '' ORDER BY attempts.id DESC LIMIT 1) AS placement`
)

// CreateJob stores a new PENDING job and its tasks and returns its id. When
// j.RetryOf is set, the original must have ended; the new job joins the
// original's chain (root_id) and the original gains retried_in, in the same
// transaction. The job's changes of status are written to the notification
// outbox only when its spec names notify (NamesNotify) or default webhooks
// are recorded (SetDefaultWebhooks).
func (s *Store) CreateJob(ctx context.Context, j *Job, tasks []NewTask) (int64, error) {
	return s.CreateJobWith(ctx, j, tasks, nil)
}

// CreateJobWith is CreateJob that also runs prepare with the new job's id
// before the job is committed: what the job needs besides its row (its
// secrets) exists before any controller can see the job, and a failing
// prepare stores nothing. On PostgreSQL a transaction the database
// aborted (a deadlock) runs again, calling prepare again with the id the
// new try gets.
func (s *Store) CreateJobWith(ctx context.Context, j *Job, tasks []NewTask, prepare func(id int64) error) (int64, error) {
	var id int64
	err := s.tx(ctx, func(tx *dbTx) error {
		now := s.now()
		var root any
		if j.RetryOf != nil {
			// A terminal status never changes: the original need not be
			// locked, only read.
			orig, err := findJob(ctx, tx, *j.RetryOf)
			if err != nil {
				return fmt.Errorf("job %d: %w", *j.RetryOf, err)
			}
			if !orig.Status.Terminal() {
				return fmt.Errorf("job %d is %s: %w", orig.ID, orig.Status, ErrNotTerminal)
			}
			root = orig.RootID
		}
		trigger := j.Trigger
		trigger = cmp.Or(trigger, "user")
		links := make([]bool, len(tasks))
		for i, t := range tasks {
			links[i] = t.Linked != nil
		}
		status, taskStatus := lifecycle.NewJob(links)
		var err error
		id, err = insertID(ctx, tx, `INSERT INTO jobs (name, status, spec, base_dir, num_tasks, input_key,
			retry_of, root_id, trigger, requested_by, retry_reason, overrides, submitted_at, owner, notify, priority, ask)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.Name, status, string(j.Spec), j.BaseDir, len(tasks), nullStr(j.InputKey),
			j.RetryOf, root, trigger, j.RequestedBy, j.RetryReason, nullBytes(j.Overrides), fmtTime(now), j.Owner,
			boolInt(NamesNotify(j.Spec)), j.Priority, j.Ask)
		if err != nil {
			return err
		}
		if root == nil {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET root_id = id WHERE id = ?`, id); err != nil {
				return err
			}
		}
		if j.RetryOf != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET retried_in = ? WHERE id = ?`, id, *j.RetryOf); err != nil {
				return err
			}
			detail := fmt.Sprintf("job %d: %s", id, j.RetryReason)
			if err := recordAction(ctx, tx, Action{At: now, Actor: j.RequestedBy, Verb: "retry", JobID: *j.RetryOf, Detail: detail}); err != nil {
				return err
			}
		}
		linked := 0
		for i, t := range tasks {
			var linkJob, linkTask any
			if t.Linked != nil {
				if i != linked {
					return fmt.Errorf("task %d is linked after task %d, which runs: %w", i, linked, ErrLinkNotAPrefix)
				}
				linked++
				linkJob, linkTask = t.Linked.Job, t.Linked.Task
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (job_id, idx, name, status, input_key, linked_job, linked_task, resources)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, i, t.Name, taskStatus[i], nullStr(t.InputKey), linkJob, linkTask, t.Resources); err != nil {
				return err
			}
		}
		if linked == len(tasks) && linked > 0 {
			return fmt.Errorf("every task is linked, none would run: %w", ErrLinkNotAPrefix)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET current_task = ? WHERE id = ?`, linked, id); err != nil {
			return err
		}
		if prepare != nil {
			return prepare(id)
		}
		return nil
	})
	return id, err
}

// ErrLinkNotAPrefix is returned when the linked tasks of a new job are not
// its first ones, or are all of them.
var ErrLinkNotAPrefix = errors.New("linked tasks must be the first tasks of a job, and not all of them")

// ErrNotTerminal is returned when a retry names a job that has not ended.
var ErrNotTerminal = fmt.Errorf("only ended jobs can be retried")

// Job returns one job.
func (s *Store) Job(ctx context.Context, id int64) (*Job, error) {
	return findJob(ctx, s.db, id)
}

// CancelRequested says whether a cancel of job id has been asked for: the
// one column a step reads again, after the job, to catch a cancel that
// came in between, without reading the whole row (its spec) once more.
func (s *Store) CancelRequested(ctx context.Context, id int64) (bool, error) {
	var requested bool
	err := s.db.QueryRowContext(ctx, `SELECT cancel_requested FROM jobs WHERE id = ?`, id).Scan(&requested)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return requested, err
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queryAll runs query on q and returns its rows, each as scan reads it.
func queryAll[T any](ctx context.Context, q querier, scan func(*sql.Rows) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// column reads a row of one column.
func column[T any](rows *sql.Rows) (T, error) {
	var v T
	err := rows.Scan(&v)
	return v, err
}

func findJob(ctx context.Context, q querier, id int64) (*Job, error) {
	jobs, err := findJobs(ctx, q, `WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	return jobs[0], nil
}

// JobFilter selects jobs. Zero fields select everything.
type JobFilter struct {
	IDs      []int64
	Statuses []lifecycle.Status
	// NameGlob is a shell pattern matched against the job name.
	NameGlob string
	Since    *time.Time // submitted at or after
	// Active selects only jobs that have not ended.
	Active bool
	// Limit caps the number of jobs returned, the first in the order
	// asked; 0 means no limit.
	Limit int
	// Ascending orders by id ascending instead of newest first.
	Ascending bool
	// Owner selects the jobs of one owner; "" selects every owner's.
	Owner string
	// BeforeID keeps the jobs whose id is below it, a page's cursor: the
	// next page of a listing newest first starts below its last id. 0
	// keeps every id.
	BeforeID int64
}

// Jobs returns the jobs matching f, newest first unless f.Ascending,
// without their spec (Spec is empty): read one job whole with Job.
func (s *Store) Jobs(ctx context.Context, f JobFilter) ([]*Job, error) {
	var out []*Job
	err := s.EachJob(ctx, f, func(j *Job) error { out = append(out, j); return nil })
	return out, err
}

// EachJob calls fn with each job Jobs would return, in its order, as it is
// read: a long listing is never in memory whole. An error from fn stops it.
func (s *Store) EachJob(ctx context.Context, f JobFilter, fn func(*Job) error) error {
	var where []string
	var args []any
	if len(f.IDs) > 0 {
		where = append(where, "id IN ("+placeholders(len(f.IDs))+")")
		for _, id := range f.IDs {
			args = append(args, id)
		}
	}
	if len(f.Statuses) > 0 {
		where = append(where, "status IN ("+placeholders(len(f.Statuses))+")")
		for _, st := range f.Statuses {
			args = append(args, st)
		}
	}
	if f.Active {
		// By the statuses it may have, which the status index serves: NOT
		// IN the terminal ones reads every job ever run.
		where = append(where, activeSQL)
	}
	if f.NameGlob != "" {
		// SQLite's GLOB has the shell's * ? [..] and is case sensitive, as
		// path.Match is; PostgreSQL is asked the same as a regular expression.
		cond, arg := s.d.globSQL("name", f.NameGlob)
		where = append(where, cond)
		args = append(args, arg)
	}
	if f.Owner != "" {
		where = append(where, "owner = ?")
		args = append(args, f.Owner)
	}
	if f.Since != nil {
		where = append(where, "submitted_at >= ?")
		args = append(args, fmtTime(*f.Since))
	}
	if f.BeforeID > 0 {
		where = append(where, "id < ?")
		args = append(args, f.BeforeID)
	}
	q := ""
	if len(where) > 0 {
		q = "WHERE " + strings.Join(where, " AND ")
	}
	if f.Ascending {
		q += " ORDER BY id ASC"
	} else {
		q += " ORDER BY id DESC"
	}
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+listColumns+` FROM jobs `+q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return err
		}
		if err := fn(j); err != nil {
			return err
		}
	}
	return rows.Err()
}

// ValidGlob reports whether pattern is a well-formed name pattern.
func ValidGlob(pattern string) error {
	_, err := path.Match(pattern, "")
	return err
}

func findJobs(ctx context.Context, q querier, tail string, args ...any) ([]*Job, error) {
	return queryAll(ctx, q, scanJob, `SELECT `+jobColumns+` FROM jobs `+tail, args...)
}

func scanJob(rows *sql.Rows) (*Job, error) {
	var j Job
	var failure, inputKey, exitCodes, overrides, next, started, ended, size, resources, placement sql.NullString
	var retriedIn, retryOf, root sql.NullInt64
	var cost, costRate sql.NullFloat64
	var costSince, admitted sql.NullString
	var waitPlace, yieldFor sql.NullInt64
	var submitted string
	var spec string
	if err := rows.Scan(&j.ID, &j.Name, &j.Status, &j.StatusReason, &failure, &spec, &j.BaseDir, &j.CurrentTask, &j.NumTasks,
		&j.CancelRequested, &next, &inputKey, &j.RecoveryCount, &j.RestartsOnErrors, &exitCodes,
		&retriedIn, &retryOf, &root, &j.Trigger, &j.RequestedBy, &j.RetryReason, &overrides,
		&submitted, &started, &ended, &j.Owner, &j.CancelledBy, &cost, &j.CostEstimate, &costRate, &costSince,
		&j.Priority, &j.Ask, &admitted, &j.WaitReason, &waitPlace, &yieldFor, &j.YieldReason,
		&size, &resources, &placement); err != nil {
		return nil, err
	}
	if cost.Valid {
		j.Cost = &cost.Float64
	}
	if costRate.Valid {
		j.CostRate = &costRate.Float64
	}
	j.CostSince = parseTime(costSince)
	j.AdmittedAt = parseTime(admitted)
	j.WaitPlace = int(waitPlace.Int64)
	if yieldFor.Valid {
		j.YieldFor = &yieldFor.Int64
	}
	j.Spec = []byte(spec)
	// A size that cannot be read is left out of listings; the controller
	// reads the attempt's own and stops there.
	j.Size, _ = readSize(size)
	j.Resources = resources.String
	if cloud, rest, ok := strings.Cut(placement.String, "/"); ok {
		region, zone, _ := strings.Cut(rest, "/")
		j.Placement = &Placement{Cloud: cloud, Region: region, Zone: zone}
	}
	j.FailureReason = failure.String
	j.InputKey = inputKey.String
	j.NextActionAt = parseTime(next)
	if exitCodes.Valid {
		if err := json.Unmarshal([]byte(exitCodes.String), &j.ExitCodes); err != nil {
			return nil, fmt.Errorf("job %d exit_codes: %w", j.ID, err)
		}
	}
	if retriedIn.Valid {
		j.RetriedIn = &retriedIn.Int64
	}
	if retryOf.Valid {
		j.RetryOf = &retryOf.Int64
	}
	j.RootID = root.Int64
	if overrides.Valid {
		j.Overrides = []byte(overrides.String)
	}
	if t := parseTime(sql.NullString{String: submitted, Valid: true}); t != nil {
		j.SubmittedAt = *t
	}
	j.StartedAt = parseTime(started)
	j.EndedAt = parseTime(ended)
	return &j, nil
}

// Retries returns the ids of the jobs that retry job id, oldest first.
func (s *Store) Retries(ctx context.Context, id int64) ([]int64, error) {
	return queryAll(ctx, s.db, column[int64], `SELECT id FROM jobs WHERE retry_of = ? ORDER BY id`, id)
}

// Chain returns every job sharing root, oldest first: the original and all
// its retries, retries of retries included.
func (s *Store) Chain(ctx context.Context, root int64) ([]*Job, error) {
	return findJobs(ctx, s.db, `WHERE root_id = ? ORDER BY id`, root)
}

// RequestCancel marks the given non-terminal jobs CANCELLING and returns the
// ids it marked; jobs that have ended are left as they are.
func (s *Store) RequestCancel(ctx context.Context, ids []int64) ([]int64, error) {
	return s.RequestCancelBy(ctx, ids, "")
}

// RequestCancelBy is RequestCancel asked by the user by: each job it marks
// records by as its cancelled_by, and the cancel as an action.
func (s *Store) RequestCancelBy(ctx context.Context, ids []int64, by string) ([]int64, error) {
	var marked []int64
	err := s.tx(ctx, func(tx *dbTx) error {
		marked = nil
		now := s.now()
		for _, id := range ids {
			if err := s.d.lockJob(ctx, tx, id); err != nil {
				return err
			}
			j, err := readJob(ctx, tx, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			c, err := lifecycle.Cancel(j.Job)
			if errors.Is(err, ErrTerminal) {
				continue // a job that has ended is left as it is
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET cancel_requested = 1, status = ?, status_reason = ?, cancelled_by = ? WHERE id = ?`,
				c.Job, c.StatusReason, by, id); err != nil {
				return err
			}
			if err := recordAction(ctx, tx, Action{At: now, Actor: by, Verb: "cancel", JobID: id}); err != nil {
				return err
			}
			marked = append(marked, id)
		}
		return nil
	})
	return marked, err
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// CountJobsByStatus counts the jobs of each status in one grouped query
// (the status index answers it); statuses without a job are absent.
func (s *Store) CountJobsByStatus(ctx context.Context) (map[lifecycle.Status]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT status, COUNT(*) FROM jobs GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[lifecycle.Status]int{}
	for rows.Next() {
		var st string
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[lifecycle.Status(st)] = n
	}
	return out, rows.Err()
}
