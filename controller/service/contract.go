package service

import "sortie/controller/contract"

// The service's requests, answers and errors are package contract's, which
// the CLI, the API's client and the dashboard speak without this package
// (and its store). These names are the same types.
type (
	LaunchRequest = contract.LaunchRequest
	Upload        = contract.Upload
	QueueRequest  = contract.QueueRequest
	CancelRequest = contract.CancelRequest
	RetryRequest  = contract.RetryRequest
	LogsRequest   = contract.LogsRequest
	ShellRequest  = contract.ShellRequest
	Filter        = contract.Filter
	Asker         = contract.Asker

	JobView          = contract.JobView
	JobDetail        = contract.JobDetail
	SizeView         = contract.SizeView
	Override         = contract.Override
	TaskView         = contract.TaskView
	TaskRef          = contract.TaskRef
	AttemptView      = contract.AttemptView
	NoticeView       = contract.NoticeView
	LaunchTryView    = contract.LaunchTryView
	StorageView      = contract.StorageView
	NotificationView = contract.NotificationView
	RetryResult      = contract.RetryResult
	FailureView      = contract.FailureView
	ReleaseView      = contract.ReleaseView
	ReplicaView      = contract.ReplicaView
	SSHKey           = contract.SSHKey
	Plan             = contract.Plan
	TaskPlan         = contract.TaskPlan
	EscalatePlan     = contract.EscalatePlan
	PlacementPlan    = contract.PlacementPlan
	RepoPlan         = contract.RepoPlan
	MountPlan        = contract.MountPlan

	UsageError        = contract.UsageError
	KnownFailureError = contract.KnownFailureError
	ForbiddenError    = contract.ForbiddenError
)

// The service's sentinel errors.
var (
	ErrNoSuchJob   = contract.ErrNoSuchJob
	ErrLogNotKept  = contract.ErrLogNotKept
	ErrLogsRemoved = contract.ErrLogsRemoved
	ErrNoAttempt   = contract.ErrNoAttempt
	ErrJobRunning  = contract.ErrJobRunning
	ErrNotKept     = contract.ErrNotKept
	ErrReleased    = contract.ErrReleased
)
