package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy"
)

// Confirmation is a failure run again to tell whether it is deterministic
// (job_recovery.confirm_failures): the failed attempt, and the run that
// confirmed it or not.
type Confirmation struct {
	JobID    int64
	TaskIdx  int
	InputKey string
	Failed   strategy.Evidence
	// Confirming is the run that gave the verdict; nil while it runs.
	Confirming *strategy.Evidence
	// Verdict is "" while the confirmation runs, and for one that ended
	// without a verdict (the job cancelled, no capacity left).
	Verdict   strategy.VerdictKind
	StartedAt time.Time
	DecidedAt *time.Time
}

// evidence is strategy.Evidence as stored.
type evidence struct {
	Attempt   int    `json:"attempt"`
	Outcome   string `json:"outcome"`
	ExitCodes []*int `json:"exit_codes"`
	Cloud     string `json:"cloud"`
	Region    string `json:"region"`
	Zone      string `json:"zone"`
}

func evidenceColumn(e *strategy.Evidence) any {
	if e == nil {
		return nil
	}
	b, _ := json.Marshal(evidence{Attempt: e.Attempt, Outcome: string(e.Outcome), ExitCodes: e.ExitCodes,
		Cloud: e.Placement.Cloud, Region: e.Placement.Region, Zone: e.Placement.Zone})
	return string(b)
}

func readEvidence(s sql.NullString) *strategy.Evidence {
	if !s.Valid || s.String == "" {
		return nil
	}
	var e evidence
	if json.Unmarshal([]byte(s.String), &e) != nil {
		return nil
	}
	return &strategy.Evidence{Attempt: e.Attempt, Outcome: strategy.Outcome(e.Outcome), ExitCodes: e.ExitCodes,
		Placement: schema.Placement{Cloud: e.Cloud, Region: e.Region, Zone: e.Zone}}
}

// startConfirmation records that the failure failed, of task idx of job
// (whose inputs are key), is being run again.
func startConfirmation(ctx context.Context, tx *dbTx, job int64, idx int, key string, failed *strategy.Evidence, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO confirmations (job_id, task_idx, attempt, input_key, failed, started_at) VALUES (?, ?, ?, ?, ?, ?)`,
		job, idx, failed.Attempt, key, evidenceColumn(failed), fmtTime(now))
	return err
}

// recordVerdict ends the confirmation of v.First with v.
func recordVerdict(ctx context.Context, tx *dbTx, job int64, idx int, v *strategy.Verdict) error {
	_, err := tx.ExecContext(ctx, `UPDATE confirmations SET verdict = ?, confirming = ?, decided_at = ?
		WHERE job_id = ? AND task_idx = ? AND attempt = ? AND verdict IS NULL`,
		string(v.Kind), evidenceColumn(&v.Second), fmtTime(v.At), job, idx, v.First.Attempt)
	return err
}

// PendingConfirmation returns the failure that task idx of job is running
// again to confirm, or nil when it is running none.
func (s *Store) PendingConfirmation(ctx context.Context, job int64, idx int) (*strategy.Evidence, error) {
	cs, err := s.confirmations(ctx, `WHERE job_id = ? AND task_idx = ? AND verdict IS NULL ORDER BY attempt DESC`, job, idx)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	f := cs[0].Failed
	return &f, nil
}

// Confirmations returns a job's confirmations, task by task, in order.
func (s *Store) Confirmations(ctx context.Context, job int64) ([]Confirmation, error) {
	return s.confirmations(ctx, `WHERE job_id = ? ORDER BY task_idx, attempt`, job)
}

// FlakyInput is an input key whose failures were found flaky: the latest
// such confirmation, how many were, and how many jobs with those inputs
// have ended (SUCCEEDED, FAILED or FAILED_SETUP).
type FlakyInput struct {
	Latest Confirmation
	Flaky  int
	Runs   int
	// JobName and TaskName name the latest flaky job and its task.
	JobName string
	Owner   string
	// Status is the latest flaky job's status.
	Status lifecycle.Status
}

// FlakyInputs lists the input keys found flaky, the most recent first.
func (s *Store) FlakyInputs(ctx context.Context) ([]FlakyInput, error) {
	cs, err := s.confirmations(ctx, `WHERE verdict = ? AND input_key <> '' ORDER BY decided_at DESC, job_id DESC`, string(strategy.Flaky))
	if err != nil {
		return nil, err
	}
	var out []FlakyInput
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.InputKey] {
			continue
		}
		seen[c.InputKey] = true
		f := FlakyInput{Latest: c}
		if f.Flaky, f.Runs, err = s.FlakyRuns(ctx, c.InputKey); err != nil {
			return nil, err
		}
		var name, owner, status sql.NullString
		err := s.db.QueryRowContext(ctx, `SELECT name, owner, status FROM jobs WHERE id = ?`, c.JobID).Scan(&name, &owner, &status)
		if err != nil && err != sql.ErrNoRows {
			return nil, err
		}
		f.JobName, f.Owner, f.Status = name.String, owner.String, lifecycle.Status(status.String)
		out = append(out, f)
	}
	return out, nil
}

// FlakyRuns counts, for input key, the confirmations found flaky and the
// jobs with those inputs that have ended SUCCEEDED, FAILED or
// FAILED_SETUP: "flaky 3 of 4 runs".
func (s *Store) FlakyRuns(ctx context.Context, key string) (flaky, runs int, err error) {
	if key == "" {
		return 0, 0, nil
	}
	err = s.db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM confirmations WHERE input_key = ? AND verdict = ?),
		(SELECT COUNT(*) FROM jobs WHERE input_key = ? AND status IN (?, ?, ?))`,
		key, string(strategy.Flaky), key, lifecycle.Succeeded, lifecycle.Failed, lifecycle.FailedSetup).Scan(&flaky, &runs)
	return flaky, runs, err
}

// forgetConfirmations removes the flaky confirmations of key, with the
// known failure of the same key (ForgetFailureBy).
func forgetConfirmations(ctx context.Context, tx *dbTx, key string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM confirmations WHERE input_key = ? AND verdict = ?`, key, string(strategy.Flaky))
	return err
}

func (s *Store) confirmations(ctx context.Context, tail string, args ...any) ([]Confirmation, error) {
	return queryAll(ctx, s.db, scanConfirmation, `SELECT job_id, task_idx, input_key, failed, confirming, verdict, started_at, decided_at
		FROM confirmations `+tail, args...)
}

func scanConfirmation(rows *sql.Rows) (Confirmation, error) {
	var c Confirmation
	var failed, confirming, verdict, decided sql.NullString
	var started string
	if err := rows.Scan(&c.JobID, &c.TaskIdx, &c.InputKey, &failed, &confirming, &verdict, &started, &decided); err != nil {
		return c, err
	}
	if f := readEvidence(failed); f != nil {
		c.Failed = *f
	}
	c.Confirming = readEvidence(confirming)
	c.Verdict = strategy.VerdictKind(verdict.String)
	if p := parseTime(sql.NullString{String: started, Valid: true}); p != nil {
		c.StartedAt = *p
	}
	c.DecidedAt = parseTime(decided)
	return c, nil
}

// confirmed writes what f says of a confirmation in EndAttempt's
// transaction: one started, or one ended with a verdict.
func confirmed(ctx context.Context, tx *dbTx, job int64, idx int, key string, f Facts, now time.Time) error {
	if f.ConfirmFrom != nil {
		if err := startConfirmation(ctx, tx, job, idx, key, f.ConfirmFrom, now); err != nil {
			return err
		}
	}
	if f.Verdict != nil {
		return recordVerdict(ctx, tx, job, idx, f.Verdict)
	}
	return nil
}

// flakyOwner is the latest job whose inputs key were found flaky, as a
// KnownFailure holding its id and owner, for ForgetFailureBy's check.
func flakyOwner(ctx context.Context, tx *dbTx, key string) ([]*KnownFailure, error) {
	return queryAll(ctx, tx, func(rows *sql.Rows) (*KnownFailure, error) {
		f := &KnownFailure{InputKey: key}
		var owner sql.NullString
		err := rows.Scan(&f.JobID, &owner)
		f.Owner = owner.String
		return f, err
	}, `SELECT c.job_id, (SELECT owner FROM jobs WHERE jobs.id = c.job_id) FROM confirmations c
		WHERE c.input_key = ? AND c.verdict = 'flaky' ORDER BY c.decided_at DESC, c.job_id DESC LIMIT 1`, key)
}
