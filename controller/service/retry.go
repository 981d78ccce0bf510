package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
)

// RetryRequest is `jobs retry`: the jobs by id, or by filter.
type RetryRequest struct {
	IDs      []int64
	Statuses []lifecycle.Status
	NameGlob string
	// Since keeps filter matches submitted within this long; 0 means any time.
	Since       time.Duration
	Reason      string
	Sets        []string
	RequestedBy string
	// Warn is told each field a --set gives that sortie accepts and
	// ignores; nil drops them.
	Warn func(string) `json:"-"`
}

// RetryResult pairs a retried job with its new retry.
type RetryResult struct {
	Original JobView    `json:"original"`
	Retry    *JobView   `json:"retry"`
	Override []Override `json:"overrides"`
}

// RetryTargets resolves the jobs a retry names and checks that each can be
// retried: it exists and has ended.
func (s *Service) RetryTargets(ctx context.Context, req RetryRequest) ([]JobView, error) {
	if strings.TrimSpace(req.Reason) == "" {
		return nil, &UsageError{Err: errors.New("--reason is required: say why the job is retried (e.g. --reason 'flaky network')")}
	}
	var jobs []*store.Job
	if len(req.IDs) > 0 {
		for _, id := range req.IDs {
			j, err := s.job(ctx, id)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, j)
		}
	} else {
		if len(req.Statuses) == 0 && req.NameGlob == "" {
			return nil, &UsageError{Err: errors.New("name the jobs to retry: IDs, or a filter such as --status FAILED --name 'lab-*'")}
		}
		for _, st := range req.Statuses {
			if !st.Terminal() {
				return nil, &UsageError{Err: fmt.Errorf("--status: %q is not a status of an ended job (one of %s)", st, joinStatuses(lifecycle.TerminalStatuses()))}
			}
		}
		if err := store.ValidGlob(req.NameGlob); err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--name: %q is not a valid pattern: %v", req.NameGlob, err)}
		}
		f := store.JobFilter{Statuses: req.Statuses, NameGlob: req.NameGlob, Ascending: true}
		if len(f.Statuses) == 0 {
			f.Statuses = lifecycle.TerminalStatuses()
		}
		if req.Since > 0 {
			t := s.Now().Add(-req.Since)
			f.Since = &t
		}
		var err error
		if jobs, err = s.Store.Jobs(ctx, f); err != nil {
			return nil, fmt.Errorf("list jobs to retry: %w", err)
		}
	}
	out := make([]JobView, 0, len(jobs))
	for _, j := range jobs {
		if !j.Status.Terminal() {
			return nil, &UsageError{Err: fmt.Errorf("job %d is %s: only ended jobs can be retried; wait for it to end or cancel it (`sortie jobs cancel %d`)", j.ID, j.Status, j.ID)}
		}
		out = append(out, viewJob(j))
	}
	return out, nil
}

// Retry creates one new job per target from the target's stored task,
// with the overrides applied: every override is validated against every
// target before anything is created.
func (s *Service) Retry(ctx context.Context, req RetryRequest) ([]RetryResult, error) {
	targets, err := s.RetryTargets(ctx, req)
	if err != nil {
		return nil, err
	}
	type planned struct {
		job       *store.Job
		pipeline  *schema.Pipeline
		overrides []schema.Override
		secrets   map[string]string
		key       string
	}
	plans := make([]planned, 0, len(targets))
	for _, t := range targets {
		j, err := s.job(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		p, err := schema.Unmarshal(j.Spec)
		if err != nil {
			return nil, fmt.Errorf("job %d spec: %w", j.ID, err)
		}
		var ov []schema.Override
		if len(req.Sets) > 0 {
			if p, ov, err = schema.ApplySet(p, req.Sets); err != nil {
				return nil, fmt.Errorf("--set for job %d: %w", j.ID, err)
			}
			for _, w := range p.Warnings {
				if req.Warn != nil {
					req.Warn(fmt.Sprintf("job %d: %s", j.ID, w))
				}
			}
		}
		plans = append(plans, planned{job: j, pipeline: p, overrides: ov})
	}
	// What can still refuse a retry is checked for every target first, so a
	// bad one creates none rather than some.
	for i := range plans {
		pl := &plans[i]
		var err error
		if pl.secrets, err = s.resolveSecrets(pl.pipeline); err != nil {
			return nil, fmt.Errorf("retry job %d: %w", pl.job.ID, err)
		}
		if probs := inputProblems(pl.pipeline, pl.job.BaseDir); len(probs) > 0 {
			return nil, fmt.Errorf("retry job %d: %w", pl.job.ID, &schema.ValidationError{Problems: probs})
		}
		if pl.key, err = inputKey(pl.pipeline, pl.job.BaseDir); err != nil {
			return nil, fmt.Errorf("retry job %d: %w", pl.job.ID, err)
		}
	}
	results := make([]RetryResult, 0, len(plans))
	for _, pl := range plans {
		diff, _ := json.Marshal(pl.overrides)
		if len(pl.overrides) == 0 {
			diff = nil
		}
		reason := req.Reason
		if note := s.knownFailureNote(ctx, pl.key); note != "" {
			reason += " (" + note + ")"
		}
		v, err := s.submit(ctx, pl.pipeline, submission{name: retryName(pl.job, pl.pipeline, pl.overrides), baseDir: pl.job.BaseDir,
			retry: pl.job, reason: reason, overrides: diff, requestedBy: req.RequestedBy, secrets: pl.secrets, key: pl.key})
		if err != nil {
			return results, fmt.Errorf("retry job %d: %w", pl.job.ID, err)
		}
		orig, err := s.job(ctx, pl.job.ID)
		if err != nil {
			return results, err
		}
		ovs := make([]Override, len(pl.overrides))
		for i, o := range pl.overrides {
			ovs[i] = Override{Path: o.Path, Old: o.Old, New: o.New}
		}
		results = append(results, RetryResult{Original: viewJob(orig), Retry: v, Override: ovs})
	}
	return results, nil
}

// knownFailureNote says when a retry's inputs already failed: a manual
// retry runs anyway, and its reason records that it was asked knowingly.
func (s *Service) knownFailureNote(ctx context.Context, key string) string {
	f, err := s.Store.KnownFailure(ctx, key)
	if err != nil || f == nil {
		return ""
	}
	return fmt.Sprintf("inputs already failed in job %d", f.JobID)
}

// FailureView is one known failure as `jobs failures -o json` prints it.
type FailureView struct {
	InputKey   string           `json:"input_key"`
	JobID      int64            `json:"job_id"`
	TaskName   string           `json:"task_name"`
	Status     lifecycle.Status `json:"status"`
	ExitCodes  []*int           `json:"exit_codes"`
	LogPath    string           `json:"log_path"`
	RecordedAt time.Time        `json:"recorded_at"`
}

// Failures lists the known failures, newest first.
func (s *Service) Failures(ctx context.Context) ([]FailureView, error) {
	fs, err := s.Store.KnownFailures(ctx)
	if err != nil {
		return nil, fmt.Errorf("list known failures: %w", err)
	}
	out := make([]FailureView, 0, len(fs))
	for _, f := range fs {
		out = append(out, FailureView{InputKey: f.InputKey, JobID: f.JobID, TaskName: f.TaskName, Status: f.Status,
			ExitCodes: f.ExitCodes, LogPath: f.LogPath, RecordedAt: f.RecordedAt.UTC()})
	}
	return out, nil
}

// ForgetFailure forgets the known failure whose key starts with prefix.
func (s *Service) ForgetFailure(ctx context.Context, prefix string) (string, error) {
	if len(prefix) < 4 {
		return "", &UsageError{Err: fmt.Errorf("key %q is too short: give at least 4 characters of the key `sortie jobs failures` shows", prefix)}
	}
	key, err := s.Store.ForgetFailure(ctx, prefix)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("no known failure has a key starting with %q (see `sortie jobs failures`)", prefix)
	case errors.Is(err, store.ErrAmbiguous):
		return "", &UsageError{Err: fmt.Errorf("%q matches several known failures: give more of the key", prefix)}
	}
	return key, err
}

// ForgetAllFailures forgets every known failure.
func (s *Service) ForgetAllFailures(ctx context.Context) (int64, error) {
	return s.Store.ForgetAllFailures(ctx)
}

// retryName is the retry's job name: the original's, unless --set name
// gave a new one, which the overrides then show.
func retryName(j *store.Job, p *schema.Pipeline, overrides []schema.Override) string {
	for _, o := range overrides {
		if o.Path == "name" && p.Name != "" {
			return p.Name
		}
	}
	return j.Name
}
