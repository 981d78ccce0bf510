package service

import (
	"context"
	"fmt"

	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/strategy"
)

// showConfirmations marks in d the attempts that ran a failure again
// (job_recovery.confirm_failures) with the attempt they confirm and their
// verdict, and counts the flaky verdicts of the job's inputs.
func (s *Service) showConfirmations(ctx context.Context, d *contract.JobDetail, inputKey string) error {
	cs, err := s.Store.Confirmations(ctx, d.ID)
	if err != nil {
		return fmt.Errorf("job %d: confirmations: %w", d.ID, err)
	}
	for _, c := range cs {
		for i := range d.Attempts {
			a := &d.Attempts[i]
			if a.Task != c.TaskIdx || a.Attempt <= c.Failed.Attempt || (c.Confirming != nil && a.Attempt > c.Confirming.Attempt) {
				continue
			}
			n := c.Failed.Attempt
			a.Confirms = &n
			if c.Confirming != nil && a.Attempt == c.Confirming.Attempt {
				a.Verdict = strPtr(string(c.Verdict))
			}
		}
	}
	flaky, runs, err := s.Store.FlakyRuns(ctx, inputKey)
	if err != nil {
		return fmt.Errorf("job %d: flaky runs: %w", d.ID, err)
	}
	if flaky > 0 {
		d.Flaky = &contract.FlakyCount{Flaky: flaky, Runs: runs}
	}
	return nil
}

func viewEvidence(task int, e strategy.Evidence) contract.EvidenceView {
	return contract.EvidenceView{Task: task, Attempt: e.Attempt, Outcome: string(e.Outcome), ExitCodes: e.ExitCodes,
		Cloud: e.Placement.Cloud, Region: e.Placement.Region, Zone: e.Placement.Zone}
}

// viewVerdict adds to v, the view of known failure f, its verdict and its
// evidence.
func viewVerdict(v *contract.FailureView, f *store.KnownFailure) {
	v.Verdict = contract.VerdictUnconfirmed
	if f.Verdict != "" {
		v.Verdict = string(f.Verdict)
	}
	task := 0
	if f.Task != nil {
		task = *f.Task
	}
	for _, e := range f.Evidence {
		v.Evidence = append(v.Evidence, viewEvidence(task, e))
	}
}

// confirmedFailure adds to v, the view of known failure f, the flaky
// count of its inputs.
func (s *Service) confirmedFailure(ctx context.Context, v *contract.FailureView, f *store.KnownFailure) error {
	var err error
	v.Flaky, v.Runs, err = s.Store.FlakyRuns(ctx, f.InputKey)
	return err
}

// flakyFailures are the inputs found flaky, as `jobs failures` lists them
// beside the known failures: never refused.
func (s *Service) flakyFailures(ctx context.Context) ([]contract.FailureView, error) {
	fs, err := s.Store.FlakyInputs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list flaky inputs: %w", err)
	}
	out := make([]contract.FailureView, 0, len(fs))
	for _, f := range fs {
		c := f.Latest
		task := c.TaskIdx
		v := contract.FailureView{InputKey: c.InputKey, JobID: c.JobID, Status: f.Status, ExitCodes: c.Failed.ExitCodes,
			Owner: strPtr(f.Owner), JobName: strPtr(f.JobName), Task: &task, Verdict: contract.VerdictFlaky,
			Evidence: []contract.EvidenceView{viewEvidence(task, c.Failed)}, Flaky: f.Flaky, Runs: f.Runs}
		if c.DecidedAt != nil {
			v.RecordedAt = c.DecidedAt.UTC()
		}
		if c.Confirming != nil {
			v.Evidence = append(v.Evidence, viewEvidence(task, *c.Confirming))
		}
		out = append(out, v)
	}
	return out, nil
}
