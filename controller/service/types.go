package service

import (
	"encoding/json"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

func viewSize(s *strategy.Size) *contract.SizeView {
	if s == nil || s.IsZero() {
		return nil
	}
	v := &contract.SizeView{CPUs: strPtr(s.CPUs), Memory: strPtr(s.Memory)}
	if s.Accelerators != nil {
		v.Accelerators = strPtr(strategy.Size{Accelerators: s.Accelerators}.Rung())
	}
	return v
}

func viewDelivery(d *store.Delivery) contract.NotificationView {
	v := contract.NotificationView{Delivery: d.Key(), Event: d.Kind, Status: d.Event.To, URL: d.URL, State: d.State, Tries: d.Tries,
		At: d.Event.At.UTC(), DoneAt: utc(d.DoneAt)}
	if d.HTTPStatus > 0 {
		v.HTTPStatus = &d.HTTPStatus
	}
	if d.LastError != "" {
		v.Error = &d.LastError
	}
	if d.State == store.DeliveryPending {
		next := d.NextTryAt.UTC()
		v.NextTryAt = &next
	}
	return v
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func viewJob(j *store.Job, now time.Time) contract.JobView {
	numTasks := j.NumTasks
	v := contract.JobView{
		ID: j.ID, Name: j.Name, Status: j.Status, StatusReason: strPtr(j.StatusReason),
		CurrentTask: j.CurrentTask, NumTasks: numTasks,
		RecoveryCount: j.RecoveryCount, RestartsOnErrors: j.RestartsOnErrors, ExitCodes: j.ExitCodes,
		RetryOf: j.RetryOf, RetriedIn: j.RetriedIn, RootID: j.RootID, Trigger: j.Trigger,
		RequestedBy: strPtr(j.RequestedBy), RetryReason: strPtr(j.RetryReason),
		Owner: strPtr(j.Owner), CancelledBy: strPtr(j.CancelledBy),
		InputKey: strPtr(j.InputKey), FailureReason: strPtr(j.FailureReason),
		SubmittedAt: j.SubmittedAt.UTC(), StartedAt: utc(j.StartedAt), EndedAt: utc(j.EndedAt),
		Size: viewSize(j.Size), Resources: viewResources(j.Resources, j.Size), Location: location(j.Placement),
		Priority: j.Priority,
	}
	if j.Status == lifecycle.Pending && j.AdmittedAt == nil && j.WaitReason != "" {
		place := j.WaitPlace
		v.WaitReason, v.QueuePlace = &j.WaitReason, &place
	}
	if j.YieldFor != nil && !j.Status.Terminal() {
		v.PreemptedFor = j.YieldFor
	}
	if c := j.CostAt(now); c != nil {
		v.Cost, v.CostEstimate = &c.Dollars, c.Estimate
	}
	if len(j.Overrides) > 0 {
		_ = json.Unmarshal(j.Overrides, &v.Overrides)
	}
	if v.CurrentTask >= numTasks && numTasks > 0 {
		v.CurrentTask = numTasks - 1
	}
	return v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func viewAttempt(a *store.Attempt, now time.Time) contract.AttemptView {
	v := contract.AttemptView{
		Task: a.TaskIdx, Attempt: a.Attempt, State: a.State, Outcome: strPtr(a.Outcome), ExitCodes: a.ExitCodes,
		Cluster: a.Cluster, Cloud: strPtr(a.Cloud), Region: strPtr(a.Region), Zone: strPtr(a.Zone),
		InstanceIDs: a.InstanceIDs, Reason: strPtr(a.Reason), Action: strPtr(a.Action), Decision: strPtr(a.Decision),
		StartedAt: a.StartedAt.UTC(), EndedAt: utc(a.EndedAt), Size: viewSize(a.Size),
		KeptUntil: utc(a.KeptUntil), ReleasedAt: utc(a.ReleasedAt), ReleasedReason: strPtr(a.ReleasedReason),
		ReplacedAt: utc(a.ReplacedAt), Progress: a.Progress, PricePerHour: a.Billing.PerHour,
		BilledFrom: utc(a.Billing.From),
	}
	v.Cost, v.CostEstimate = attemptCost(a, now)
	if c := a.Checkpoint; c != nil {
		v.Checkpoint = &contract.CheckpointView{Key: c.Key, Modified: c.Modified.UTC()}
	}
	if n := a.Notice; n != nil {
		v.Notice = &contract.NoticeView{Kind: n.Kind, Source: n.Source, At: n.At.UTC(), Deadline: utc(n.Deadline)}
	}
	// The head start is measured to the notice's deadline, when the
	// cloud takes the node (without a notice, when the controller would
	// have learned of the preemption); to the attempt's end when the
	// notice named no deadline.
	switch {
	case a.ReplacedAt == nil:
	case a.Notice != nil && a.Notice.Deadline != nil:
		head := max(a.Notice.Deadline.Sub(*a.ReplacedAt), 0).Milliseconds()
		v.HeadStartMS = &head
	case a.EndedAt != nil:
		head := max(a.EndedAt.Sub(*a.ReplacedAt), 0).Milliseconds()
		v.HeadStartMS = &head
	}
	return v
}

// attemptCost is what a cost: its stored cost once it ended; while its
// cluster is up, its price at launch times its nodes and the time since
// its launch was requested, an estimate.
func attemptCost(a *store.Attempt, now time.Time) (*float64, bool) {
	if a.EndedAt != nil {
		if a.Cost == nil {
			return nil, false
		}
		return &a.Cost.Dollars, a.Cost.Estimate
	}
	b := a.Billing
	if len(a.InstanceIDs) == 0 || b.From == nil || b.PerHour == nil {
		return nil, false
	}
	d := *b.PerHour * float64(max(b.Nodes, 1)) * max(now.Sub(*b.From), 0).Hours()
	return &d, true
}
