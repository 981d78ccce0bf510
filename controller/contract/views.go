// Package contract is what the CLI, the API's client and the dashboard
// speak to the service: its requests, its answers (the objects of
// `-o json` and of the API) and its errors, with the JSON schema of each
// answer. It holds types only, and imports no store, provider or cloud
// SDK: a program that speaks it needs none of them.
package contract

import (
	"time"

	"sortie/controller/lifecycle"
)

// JobView is a job as `jobs queue -o json` prints it. Absent values are
// null, never omitted: the shape is stable, and /v1/openapi.json (built from
// these types and docs.go) is its reference.
type JobView struct {
	ID               int64            `json:"id"`
	Name             string           `json:"name"`
	Status           lifecycle.Status `json:"status"`
	StatusReason     *string          `json:"status_reason"`
	CurrentTask      int              `json:"current_task"`
	NumTasks         int              `json:"num_tasks"`
	RecoveryCount    int              `json:"recovery_count"`
	RestartsOnErrors int              `json:"restarts_on_errors"`
	ExitCodes        []*int           `json:"exit_codes" schema:"nullable"`
	RetryOf          *int64           `json:"retry_of"`
	RetriedIn        *int64           `json:"retried_in"`
	RootID           int64            `json:"root_id"`
	Trigger          string           `json:"trigger"`
	RequestedBy      *string          `json:"requested_by"`
	// Owner launched the job (a server's user, or the OS user of a CLI
	// without a server); null for jobs from before owners.
	Owner *string `json:"owner"`
	// CancelledBy asked for the job's cancel; null when no one did.
	CancelledBy   *string    `json:"cancelled_by"`
	RetryReason   *string    `json:"retry_reason"`
	Overrides     []Override `json:"overrides" schema:"nullable"`
	InputKey      *string    `json:"input_key"`
	FailureReason *string    `json:"failure_reason"`
	SubmittedAt   time.Time  `json:"submitted_at"`
	StartedAt     *time.Time `json:"started_at"`
	EndedAt       *time.Time `json:"ended_at"`
	// Size is what job_recovery.escalate chose for the current task's
	// attempts; null while the task asks for its own resources.
	Size *SizeView `json:"size"`
	// Resources are what the current task asks for, at the size an
	// escalation chose, as `sky jobs queue` writes them: nodes, then
	// accelerators, else instance type, else CPUs, and [Spot] for spot
	// capacity ("1x[A100:8]", "2x[CPU:4+][Spot]"); null for a job stored
	// before they were kept.
	Resources *string `json:"resources"`
	// Location is where the job's newest placed attempt runs or ran, its
	// cloud and zone (or region when it has no zone): "aws/us-east-1a";
	// null before any attempt was placed.
	Location *string `json:"location"`
	// Cost is what the job has cost in dollars, every attempt of every
	// task summed; null while no price of any is known.
	Cost *float64 `json:"cost"`
	// CostEstimate says Cost is an estimate: an attempt still runs, or a
	// price was stale or not known for one of them.
	CostEstimate bool `json:"cost_estimate"`
	// Priority orders the job among waiting jobs, 0-1000, higher first.
	Priority int `json:"priority"`
	// WaitReason says why a PENDING job waits under the server's limits
	// ("waiting: alice holds 16 of 16 A100 (user limit)"); QueuePlace is
	// its place among the waiting jobs, from 1. Both null once it may
	// start, and when no limits are set.
	WaitReason *string `json:"wait_reason"`
	QueuePlace *int    `json:"queue_place"`
	// PreemptedFor is the waiting job of higher priority this job is
	// being stopped for (limits.preemption): it waits again once its
	// attempt has ended. Null when it is not being preempted.
	PreemptedFor *int64 `json:"preempted_for"`
}

// SizeView is a size an escalation chose: each dimension it grows, as
// resources writes it; null for a dimension it does not grow.
type SizeView struct {
	CPUs *string `json:"cpus"`
	// Memory is in GB, "32" or "32+" (at least).
	Memory *string `json:"memory"`
	// Accelerators is one accelerator and its count, "A100:1".
	Accelerators *string `json:"accelerators"`
}

// Override is one --set of a manual retry: the field, its old and new value.
type Override struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// JobDetail is a job as `jobs show -o json` prints it.
type JobDetail struct {
	JobView
	Tasks       []TaskView      `json:"tasks"`
	Attempts    []AttemptView   `json:"attempts"`
	LaunchTries []LaunchTryView `json:"launch_tries"`
	// Retries are the jobs that retry this one, oldest first.
	Retries []int64 `json:"retries"`
	// Chain is every job from the first of the retry chain to the newest.
	Chain []JobView `json:"chain"`
	// Notifications are the job's events posted to webhooks, one per event
	// and webhook, in the order of the events.
	Notifications []NotificationView `json:"notifications"`
	// Storage is what each node's bucket syncs did, per attempt and
	// mount, as its agent last reported it.
	Storage []StorageView `json:"storage"`
	// Flaky counts the job's inputs' flaky verdicts; nil when they were
	// never found flaky.
	Flaky *FlakyCount `json:"flaky"`
	// ChainCost is what every job of the retry chain has cost (Chain's
	// costs summed); null while none is known. ChainCostEstimate says it
	// is an estimate.
	ChainCost         *float64 `json:"chain_cost"`
	ChainCostEstimate bool     `json:"chain_cost_estimate"`
}

// StorageView is what one node's syncs of one bucket did in an attempt.
type StorageView struct {
	Task    int    `json:"task"`
	Attempt int    `json:"attempt"`
	Node    int    `json:"node"`
	Path    string `json:"path"`
	// Bucket is the bucket as a URL, s3://NAME or gs://NAME.
	Bucket string `json:"bucket"`
	Mode   string `json:"mode"`
	// DownloadedAt and DownloadedBytes: the download before setup.
	DownloadedAt    *time.Time `json:"downloaded_at"`
	DownloadedBytes int64      `json:"downloaded_bytes"`
	// UploadedAt is when the last upload finished, UploadedBytes what it
	// moved, UploadedTotal what every upload of the attempt moved.
	UploadedAt    *time.Time `json:"uploaded_at"`
	UploadedBytes int64      `json:"uploaded_bytes"`
	UploadedTotal int64      `json:"uploaded_total"`
	// Error is the last sync's error; nil when it went well.
	Error *string `json:"error"`
}

// NotificationView is one event of a job posted to one webhook.
type NotificationView struct {
	// Delivery is the idempotency key the receiver got (X-Sortie-Delivery).
	Delivery string `json:"delivery"`
	// Event is the kind the webhook asked for: status, recovery, failed
	// or succeeded; Status is the job's status it tells of.
	Event  string           `json:"event"`
	Status lifecycle.Status `json:"status"`
	URL    string           `json:"url"`
	// State is pending (to be tried at NextTryAt), sending (a try is under
	// way), delivered or failed (given up).
	State string `json:"state"`
	Tries int    `json:"tries"`
	// Error is why the last failed try failed (kept after a later try
	// delivers), or why sortie gave up.
	HTTPStatus *int       `json:"http_status"`
	Error      *string    `json:"error"`
	At         time.Time  `json:"at"`
	NextTryAt  *time.Time `json:"next_try_at"`
	DoneAt     *time.Time `json:"done_at"`
}

// TaskView is one task of a job.
type TaskView struct {
	Task          int              `json:"task"`
	Name          string           `json:"name"`
	Status        lifecycle.Status `json:"status"`
	RecoveryCount int              `json:"recovery_count"`
	// RestartsOnErrors counts the failures that took the budgeted path,
	// the last one included: a task that failed for good with a budget of
	// 2 shows 3.
	RestartsOnErrors int `json:"restarts_on_errors"`
	// MaxRestartsOnErrors is the task's budget of restarts on errors.
	MaxRestartsOnErrors int `json:"max_restarts_on_errors"`
	// Ports are opened on the task's nodes: "8080" or a range
	// "10000-10010", from resources and its candidates.
	Ports     []string   `json:"ports"`
	StartedAt *time.Time `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at"`
	// LinkedFrom is the job and task whose run this task reuses: a retry
	// with --from-failed-task links the tasks that succeeded before the
	// failed one instead of running them again. Such a task is SUCCEEDED
	// and has no attempts of its own. Null for a task that runs.
	LinkedFrom *TaskRef `json:"linked_from"`
	// Size is what job_recovery.escalate chose for the task's next
	// attempts; null while it asks for its own resources.
	Size *SizeView `json:"size"`
}

// TaskRef names one task of one job.
type TaskRef struct {
	Job  int64 `json:"job"`
	Task int   `json:"task"`
}

// AttemptView is one attempt of a task.
type AttemptView struct {
	Task        int                    `json:"task"`
	Attempt     int                    `json:"attempt"`
	State       lifecycle.AttemptState `json:"state"`
	Outcome     *string                `json:"outcome"`
	ExitCodes   []*int                 `json:"exit_codes" schema:"nullable"`
	Cluster     string                 `json:"cluster"`
	Cloud       *string                `json:"cloud"`
	Region      *string                `json:"region"`
	Zone        *string                `json:"zone"`
	InstanceIDs []string               `json:"instance_ids" schema:"nullable"`
	Reason      *string                `json:"reason"`
	Action      *string                `json:"action"`
	Decision    *string                `json:"decision"`
	StartedAt   time.Time              `json:"started_at"`
	EndedAt     *time.Time             `json:"ended_at"`
	// Size is the size the attempt asked for, chosen by an escalation;
	// null for the task's own resources.
	Size *SizeView `json:"size"`
	// KeptUntil is when the cluster of an attempt whose job failed is torn
	// down (job_recovery.keep_on_failure); null when it was not kept.
	KeptUntil *time.Time `json:"kept_until"`
	// ReleasedAt and ReleasedReason say when and why a kept cluster was
	// torn down; null while it is kept, or when none was.
	ReleasedAt     *time.Time `json:"released_at"`
	ReleasedReason *string    `json:"released_reason"`
	// Notice is the preemption notice heard on the attempt's nodes; nil
	// when none.
	Notice *NoticeView `json:"notice"`
	// ReplacedAt is when the replacement was asked for because of the
	// notice, before the attempt ended; nil when it was not.
	ReplacedAt *time.Time `json:"replaced_at"`
	// HeadStartMS is how long before the notice's deadline (the attempt's
	// end when the notice named none) its replacement was asked for, in
	// milliseconds; nil when it was not replaced (or, without a deadline,
	// until it ends).
	HeadStartMS *int64 `json:"head_start_ms"`
	// Confirms is the attempt whose failure this one runs again
	// (job_recovery.confirm_failures); Verdict is what it found, null
	// while it runs. Both null for other attempts.
	Confirms *int    `json:"confirms"`
	Verdict  *string `json:"verdict"`
	// Progress is the highest progress the attempt's task reported (a
	// number written to $SORTIE_PROGRESS); nil when none.
	Progress *int64 `json:"progress"`
	// PricePerHour is one node's price per hour, in dollars, when the
	// attempt's launch was requested; null when none was known.
	PricePerHour *float64 `json:"price_per_hour"`
	// BilledFrom is when the launch of the attempt's cluster was
	// requested, where its cost is counted from; null before a launch
	// was requested.
	BilledFrom *time.Time `json:"billed_from"`
	// Cost is what the attempt cost, in dollars: every node, from its
	// launch request to its end; null when no price of it is known.
	// CostEstimate says it is an estimate (it still runs, or a price was
	// stale).
	Cost         *float64 `json:"cost"`
	CostEstimate bool     `json:"cost_estimate"`
	// Checkpoint is the newest object of the task's MOUNT_CACHED buckets
	// when the attempt ended; nil when none was seen.
	Checkpoint *CheckpointView `json:"checkpoint"`
}

// CheckpointView is an object of a MOUNT_CACHED bucket seen as a task's
// last saved state.
type CheckpointView struct {
	Key      string    `json:"key"`
	Modified time.Time `json:"modified"`
}

// NoticeView is a preemption notice.
type NoticeView struct {
	Kind     string     `json:"kind"`   // spot-interruption, rebalance, preempted
	Source   string     `json:"source"` // aws-imds, gce-metadata, local
	At       time.Time  `json:"at"`
	Deadline *time.Time `json:"deadline"`
}

// LaunchTryView is one failed launch try.
type LaunchTryView struct {
	Task    int       `json:"task"`
	Attempt int       `json:"attempt"`
	Round   int       `json:"round"`
	Cloud   string    `json:"cloud"`
	Region  string    `json:"region"`
	Zone    string    `json:"zone"`
	Class   string    `json:"class"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}
