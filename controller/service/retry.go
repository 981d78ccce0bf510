package service

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
)

// RetryTargets resolves the jobs a retry names and checks that each can be
// retried: it exists and has ended.
func (s *Service) RetryTargets(ctx context.Context, req contract.RetryRequest) ([]contract.JobView, error) {
	if strings.TrimSpace(req.Reason) == "" {
		return nil, &contract.UsageError{Err: errors.New("--reason is required: say why the job is retried (e.g. --reason 'flaky network')")}
	}
	var jobs []*store.Job
	if len(req.IDs) > 0 {
		for _, id := range req.IDs {
			j, err := s.job(ctx, id)
			if err != nil {
				return nil, err
			}
			if err := s.mayAct(j, "retry"); err != nil {
				return nil, err
			}
			jobs = append(jobs, j)
		}
	} else {
		if req.Filter.Empty() {
			return nil, &contract.UsageError{Err: errors.New("name the jobs to retry: IDs, or a filter such as --status FAILED --name 'lab-*'")}
		}
		allowed := lifecycle.TerminalStatuses()
		if req.FromFailedTask && len(req.Statuses) == 0 {
			allowed = slices.DeleteFunc(allowed, func(st lifecycle.Status) bool { return !failedInATask(st) })
		}
		var err error
		if jobs, err = s.filtered(ctx, req.Filter, allowed, "an ended job"); err != nil {
			return nil, err
		}
	}
	out := make([]contract.JobView, 0, len(jobs))
	for _, j := range jobs {
		if !j.Status.Terminal() {
			return nil, &contract.UsageError{Err: fmt.Errorf("job %d is %s: only ended jobs can be retried; wait for it to end or cancel it (`sortie jobs cancel %d`)", j.ID, j.Status, j.ID)}
		}
		if req.FromFailedTask && !failedInATask(j.Status) {
			return nil, &contract.UsageError{Err: fmt.Errorf("job %d ended %s: no task of it failed, so --from-failed-task has no task to start at; retry it without --from-failed-task to run it all again", j.ID, j.Status)}
		}
		out = append(out, viewJob(j, s.now()))
	}
	return out, nil
}

// Retry creates one new job per target from the target's stored task,
// with the overrides applied: every override is validated against every
// target before anything is created.
func (s *Service) Retry(ctx context.Context, req contract.RetryRequest) ([]contract.RetryResult, error) {
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
		links     []store.TaskRef
	}
	plans := make([]planned, 0, len(targets))
	for _, t := range targets {
		j, err := s.job(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		p, err := schema.Unmarshal(j.Spec, clouds.Schema())
		if err != nil {
			return nil, fmt.Errorf("job %d spec: %w", j.ID, err)
		}
		var ov []schema.Override
		if len(req.Sets) > 0 {
			if p, ov, err = schema.ApplySet(p, req.Sets, clouds.Schema()); err != nil {
				return nil, fmt.Errorf("--set for job %d: %w", j.ID, err)
			}
			for _, w := range p.Warnings {
				if req.Warn != nil {
					req.Warn(fmt.Sprintf("job %d: %s", j.ID, w))
				}
			}
		}
		pl := planned{job: j, pipeline: p, overrides: ov}
		if req.FromFailedTask {
			if pl.links, err = s.failedTaskLinks(ctx, j, p); err != nil {
				return nil, err
			}
		}
		plans = append(plans, pl)
	}
	// What can still refuse a retry is checked for every target first, so a
	// bad one creates none rather than some.
	for i := range plans {
		pl := &plans[i]
		var err error
		if pl.secrets, err = s.resolveSecrets(pl.pipeline, s.secretEnv(req.SecretEnv)); err != nil {
			return nil, fmt.Errorf("retry job %d: %w", pl.job.ID, err)
		}
		if probs := s.keepProblems(pl.pipeline); len(probs) > 0 {
			return nil, fmt.Errorf("retry job %d: %w", pl.job.ID, &schema.ValidationError{Problems: probs})
		}
		probs := inputProblems(pl.pipeline, pl.job.BaseDir)
		if s.Inputs != nil {
			probs = storedUploadProblems(pl.pipeline, s.Home)
		}
		if len(probs) > 0 {
			return nil, fmt.Errorf("retry job %d: %w", pl.job.ID, &schema.ValidationError{Problems: probs})
		}
		if pl.key, err = inputKey(pl.pipeline, pl.job.BaseDir, s.uploadsOf(s.Inputs != nil)); err != nil {
			return nil, fmt.Errorf("retry job %d: %w", pl.job.ID, err)
		}
	}
	results := make([]contract.RetryResult, 0, len(plans))
	for _, pl := range plans {
		diff, _ := json.Marshal(pl.overrides)
		if len(pl.overrides) == 0 {
			diff = nil
		}
		reason := req.Reason
		if note := s.knownFailureNote(ctx, pl.key); note != "" {
			reason += " (" + note + ")"
		}
		by := req.RequestedBy
		by = cmp.Or(by, s.asker().Name)
		// The retry is the original's owner's work, whoever asked for it.
		v, err := s.submit(ctx, pl.pipeline, submission{name: retryName(pl.job, pl.pipeline, pl.overrides), baseDir: pl.job.BaseDir,
			retry: pl.job, reason: reason, overrides: diff, requestedBy: by, secrets: pl.secrets, key: pl.key,
			links: pl.links, owner: pl.job.Owner})
		if err != nil {
			return results, fmt.Errorf("retry job %d: %w", pl.job.ID, err)
		}
		orig, err := s.job(ctx, pl.job.ID)
		if err != nil {
			return results, err
		}
		ovs := make([]contract.Override, len(pl.overrides))
		for i, o := range pl.overrides {
			ovs[i] = contract.Override{Path: o.Path, Old: o.Old, New: o.New}
		}
		var from *int
		if n := len(pl.links); n > 0 {
			from = &n
		}
		results = append(results, contract.RetryResult{Original: viewJob(orig, s.now()), Retry: v, Override: ovs, FromTask: from})
	}
	return results, nil
}

// failedInATask says whether a job that ended with status st stopped at
// one of its tasks failing: a retry from the failed task needs one.
func failedInATask(st lifecycle.Status) bool {
	return st.Terminal() && st != lifecycle.Succeeded && st != lifecycle.Cancelled
}

// failedTaskLinks are the links of a retry of j from its failed task: one
// per task that succeeded before it, each to the run it reuses (a task j
// itself linked keeps pointing at the run, never at j). The retry's
// pipeline p must leave those tasks as they were: a --set that changes one
// would link a run of something else.
func (s *Service) failedTaskLinks(ctx context.Context, j *store.Job, p *schema.Pipeline) ([]store.TaskRef, error) {
	tasks, err := s.Store.Tasks(ctx, j.ID)
	if err != nil {
		return nil, fmt.Errorf("job %d: tasks: %w", j.ID, err)
	}
	orig, err := schema.Unmarshal(j.Spec, clouds.Schema())
	if err != nil {
		return nil, fmt.Errorf("job %d spec: %w", j.ID, err)
	}
	var links []store.TaskRef
	for _, t := range tasks {
		if t.Status != lifecycle.Succeeded {
			break
		}
		if t.Idx >= len(p.Tasks) || t.Idx >= len(orig.Tasks) {
			return nil, fmt.Errorf("job %d: task %d is not in its spec", j.ID, t.Idx)
		}
		before, _ := json.Marshal(orig.Tasks[t.Idx])
		after, _ := json.Marshal(p.Tasks[t.Idx])
		if string(before) != string(after) {
			return nil, &contract.UsageError{Err: fmt.Errorf("job %d: --set changes task %d%s, which succeeded and which --from-failed-task would link rather than run; "+
				"retry without --from-failed-task to run every task with the change", j.ID, t.Idx, quotedName(t.Name))}
		}
		ref := store.TaskRef{Job: j.ID, Task: t.Idx}
		if t.Linked != nil {
			ref = *t.Linked
		}
		links = append(links, ref)
	}
	if len(links) == len(tasks) {
		return nil, &contract.UsageError{Err: fmt.Errorf("job %d: every task succeeded; retry it without --from-failed-task", j.ID)}
	}
	return links, nil
}

func quotedName(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", name)
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

// Failures lists the known failures, newest first.
func (s *Service) Failures(ctx context.Context) ([]contract.FailureView, error) {
	fs, err := s.Store.KnownFailures(ctx)
	if err != nil {
		return nil, fmt.Errorf("list known failures: %w", err)
	}
	out := make([]contract.FailureView, 0, len(fs))
	for _, f := range fs {
		v := viewFailure(f)
		if err := s.confirmedFailure(ctx, &v, f); err != nil {
			return nil, fmt.Errorf("list known failures: %w", err)
		}
		out = append(out, v)
	}
	flaky, err := s.flakyFailures(ctx)
	if err != nil {
		return nil, err
	}
	return append(out, flaky...), nil
}

func viewFailure(f *store.KnownFailure) contract.FailureView {
	v := contract.FailureView{InputKey: f.InputKey, JobID: f.JobID, TaskName: f.TaskName, Status: f.Status,
		ExitCodes: f.ExitCodes, LogPath: f.LogPath, RecordedAt: f.RecordedAt.UTC(), Size: viewSize(f.Size), LogsRemovedAt: utc(f.LogsRemovedAt),
		Owner: strPtr(f.Owner), JobName: strPtr(f.JobName), Task: f.Task}
	viewVerdict(&v, f)
	return v
}

// knownFailure is the error that refuses a launch of inputs that failed
// in f. Its failure carries no size, as the API's error has none: the
// message says how big the job had grown.
func knownFailure(f *store.KnownFailure, now time.Time, asker string) *contract.KnownFailureError {
	v := viewFailure(f)
	v.Size = nil
	e := &contract.KnownFailureError{Failure: &v, Now: now, Asker: asker}
	if f.Size != nil && !f.Size.IsZero() {
		e.Grown = f.Size.String()
	}
	return e
}

// ForgetFailure forgets the known failure whose key starts with prefix.
func (s *Service) ForgetFailure(ctx context.Context, prefix string) (string, error) {
	if len(prefix) < 4 {
		return "", &contract.UsageError{Err: fmt.Errorf("key %q is too short: give at least 4 characters of the key `sortie jobs failures` shows", prefix)}
	}
	key, _, err := s.Store.ForgetFailureBy(ctx, prefix, s.asker().Name, func(f *store.KnownFailure) error {
		return s.mayAct(&store.Job{ID: f.JobID, Owner: f.Owner}, "forget the failure of")
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("no known failure has a key starting with %q (see `sortie jobs failures`)", prefix)
	case errors.Is(err, store.ErrAmbiguous):
		return "", &contract.UsageError{Err: fmt.Errorf("%q matches several known failures: give more of the key", prefix)}
	}
	return key, err
}

// ForgetAllFailures forgets every known failure; a user who is no admin
// forgets those of their own jobs.
func (s *Service) ForgetAllFailures(ctx context.Context) (int64, error) {
	return s.Store.ForgetAllFailuresBy(ctx, s.asker().Name, s.onlyOwn())
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
