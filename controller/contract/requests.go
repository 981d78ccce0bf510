package contract

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/provision"
)

// LaunchRequest is `jobs launch`, and the body of the API's POST /v1/jobs.
type LaunchRequest struct {
	// File is the task file's path. Through a server it only names the
	// file (in messages and the default job name): Task holds it.
	File string `json:"file"`
	// Task is the task file's content; nil reads File.
	Task []byte `json:"task,omitempty"`
	// Dir is where a relative workdir or file_mounts source is taken from:
	// the directory the command runs in, as SkyPilot does. Empty means this
	// process's working directory. A server ignores it: Inputs hold them.
	Dir  string `json:"dir,omitempty"`
	Name string `json:"name,omitempty"`
	// Envs override and fill every task's envs (--env, --env-file); a
	// variable the file declares without a value must be given here.
	Envs map[string]string `json:"envs,omitempty"`
	// Secrets override every task's secrets (--secret).
	Secrets map[string]string `json:"secrets,omitempty"`
	// SecretEnv holds the values, from the asker's environment, of secrets
	// the file declares without a value: a server reads no environment of
	// the user's. Nil takes them from this process's environment.
	SecretEnv map[string]string `json:"secret_env,omitempty"`
	// Inputs, through a server, name the uploaded workdirs and local
	// file_mounts sources: each source as the task (after --workdir) writes
	// it, to its upload (PUT /v1/blobs). A server reads nothing of the
	// user's disk: a source not here is a problem of the task.
	Inputs map[string]Upload `json:"inputs,omitempty"`
	// Resource overrides from the command line, applied to every task and
	// to each of its candidates that sets the field: "" leaves the field
	// as the file has it, "none" removes it.
	Cloud        string   `json:"cloud,omitempty"`
	Region       string   `json:"region,omitempty"`
	Zone         string   `json:"zone,omitempty"`
	Infra        string   `json:"infra,omitempty"`
	InstanceType string   `json:"instance_type,omitempty"`
	CPUs         string   `json:"cpus,omitempty"`
	Memory       string   `json:"memory,omitempty"`
	GPUs         string   `json:"gpus,omitempty"`
	DiskSize     string   `json:"disk_size,omitempty"`
	DiskTier     string   `json:"disk_tier,omitempty"`
	NetworkTier  string   `json:"network_tier,omitempty"`
	ImageID      string   `json:"image_id,omitempty"`
	Ports        []string `json:"ports,omitempty"`
	NumNodes     *int     `json:"num_nodes,omitempty"`
	UseSpot      *bool    `json:"use_spot,omitempty"`
	// Priority replaces the task's priority (--priority), 0-1000.
	Priority *int `json:"priority,omitempty"`
	// Workdir replaces every task's workdir (--workdir).
	Workdir     string `json:"workdir,omitempty"`
	RetryFailed bool   `json:"retry_failed,omitempty"`
	// Warn is told each field the task file sets that sortie accepts and
	// ignores, one line each; nil drops them.
	Warn func(string) `json:"-"`
}

// Upload is one workdir or file mount uploaded to a server: a tar archive
// named by its SHA-256. A directory's archive holds the directory's
// contents; a single file's holds that file alone, named File.
type Upload struct {
	SHA256 string `json:"sha256"`
	// File is the name of the single file the archive holds; "" for a
	// directory.
	File string `json:"file,omitempty"`
}

// Digest is the form of an upload's name: the SHA-256 of its bytes, in
// lower-case hex.
var Digest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// QueueRequest is `jobs queue`.
type QueueRequest struct {
	All      bool               `json:"all,omitempty"`
	Statuses []lifecycle.Status `json:"statuses,omitempty"`
	NameGlob string             `json:"name,omitempty"`
	// Finished is how many of the newest finished jobs the default view
	// shows besides every unfinished one.
	Finished int `json:"finished,omitempty"`
	// Owner keeps the jobs of one owner; "" lists everyone's.
	Owner string `json:"owner,omitempty"`
	// Limit is a page's size: at most this many jobs; 0 lists them all.
	Limit int `json:"limit,omitempty"`
	// Before is a page's cursor: only the jobs of the listing whose id
	// is below it (the last id of the page before); 0 starts at the newest.
	Before int64 `json:"before,omitempty"`
}

// CancelRequest is `jobs cancel`: ids, a filter, or every unfinished job.
type CancelRequest struct {
	IDs []int64 `json:"ids,omitempty"`
	// Filter selects unfinished jobs when IDs is empty and All is not set.
	Filter
	All bool `json:"all,omitempty"`
}

// RetryRequest is `jobs retry`: the jobs by id, or by filter.
type RetryRequest struct {
	IDs []int64 `json:"ids,omitempty"`
	// Filter selects ended jobs when IDs is empty.
	Filter
	Reason string   `json:"reason"`
	Sets   []string `json:"sets,omitempty"`
	// RequestedBy is recorded as who asked; empty is the Asker. A server
	// sets it to the user its token names, whatever the body says.
	RequestedBy string `json:"requested_by,omitempty"`
	// SecretEnv holds values, from the asker's environment, of secrets the
	// stored task declares without a value (as LaunchRequest's).
	SecretEnv map[string]string `json:"secret_env,omitempty"`
	// FromFailedTask starts each retry at the task of the pipeline that
	// failed, linking the tasks that succeeded before it instead of running
	// them again. Jobs that ended SUCCEEDED or CANCELLED failed in no task
	// and are refused; a job that failed in its first task (a single-task
	// job, always) has nothing to link and is retried whole.
	FromFailedTask bool `json:"from_failed_task,omitempty"`
	// Warn is told each field a --set gives that sortie accepts and
	// ignores; nil drops them.
	Warn func(string) `json:"-"`
}

// RetryResult pairs a retried job with its new retry.
type RetryResult struct {
	Original JobView    `json:"original"`
	Retry    *JobView   `json:"retry"`
	Override []Override `json:"overrides" schema:"nullable"`
	// FromTask is the task the retry starts at with --from-failed-task
	// (the tasks before it are linked); null when it starts at the first.
	FromTask *int `json:"from_task"`
}

// FailureView is one known failure as `jobs failures -o json` prints it.
type FailureView struct {
	InputKey   string           `json:"input_key"`
	JobID      int64            `json:"job_id"`
	TaskName   string           `json:"task_name"`
	Status     lifecycle.Status `json:"status"`
	ExitCodes  []*int           `json:"exit_codes" schema:"nullable"`
	LogPath    string           `json:"log_path"`
	RecordedAt time.Time        `json:"recorded_at"`
	// Size is the size an escalation had chosen for the attempt that
	// failed; null for the task's own resources.
	Size *SizeView `json:"size"`
	// LogsRemovedAt is when the controller removed the failed job's logs
	// (controller.log_retention); null while they are kept at LogPath.
	LogsRemovedAt *time.Time `json:"logs_removed_at"`
	// Owner is the owner of the job that failed; null before owners.
	Owner *string `json:"owner"`
	// JobName and Task are the failed job's name and the position of the
	// task that failed; null once the job is no longer stored.
	JobName *string `json:"job_name"`
	Task    *int    `json:"task"`
	// Verdict is VerdictDeterministic, VerdictFlaky or
	// VerdictUnconfirmed; Evidence is the failed attempt and the run that
	// confirmed it or not, null when unconfirmed.
	Verdict  string         `json:"verdict"`
	Evidence []EvidenceView `json:"evidence" schema:"nullable"`
	// Flaky and Runs count the inputs' flaky verdicts and the ended jobs
	// with these inputs.
	Flaky int `json:"flaky"`
	Runs  int `json:"runs"`
}

// TaskLabel names the task that failed as the failure lists show it: its
// position and name, "1 (train)", or either alone; "-" when neither is
// known.
func (f FailureView) TaskLabel() string {
	switch {
	case f.Task != nil && f.TaskName != "":
		return fmt.Sprintf("%d (%s)", *f.Task, f.TaskName)
	case f.Task != nil:
		return strconv.Itoa(*f.Task)
	case f.TaskName != "":
		return f.TaskName
	}
	return "-"
}

// Filter selects jobs by status, name pattern and submission time: `jobs
// retry` and `jobs cancel` take the same flags (--status, --name, --since).
type Filter struct {
	Statuses []lifecycle.Status `json:"statuses,omitempty"`
	// NameGlob is a shell pattern (* ? [...]) matched against the whole
	// job name, case sensitive.
	NameGlob string `json:"name,omitempty"`
	// Since keeps the jobs submitted at or after it; nil means any time.
	Since *time.Time `json:"since,omitempty"`
}

// Empty says whether f selects by nothing.
func (f Filter) Empty() bool { return len(f.Statuses) == 0 && f.NameGlob == "" && f.Since == nil }

// ParseSince reads a --since value as docker's --since does: a duration
// back from now (90m, 24h, 2d), or a time (2026-11-30T15:04:05Z, with an
// offset or in UTC; 2026-11-30T15:04:05, 2026-11-30 15:04 and 2026-11-30
// in the local zone). "" means any time (nil).
func ParseSince(s string, now time.Time) (*time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if d, err := sinceDuration(s); err == nil {
		if d <= 0 {
			return nil, &UsageError{Err: fmt.Errorf("--since: %q must be a duration above 0 or a time", s)}
		}
		t := now.Add(-d)
		return &t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return &t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return &t, nil
		}
	}
	return nil, &UsageError{Err: fmt.Errorf("--since: %q is neither a duration (90m, 24h, 2d) nor a time (2026-11-30, 2026-11-30 15:04, 2026-11-30T15:04:05Z)", s)}
}

// sinceDuration is a Go duration, or a whole number of days ("2d").
func sinceDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100000 {
			return 0, errors.New("not a number of days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// LogsRequest is `jobs logs`.
type LogsRequest struct {
	ID int64 `json:"id"`
	// Attempt picks one attempt of the task (Task); 0 means the newest.
	Attempt int `json:"attempt,omitempty"`
	Task    int `json:"task,omitempty"`
	// Follow keeps printing as the job runs, attempt after attempt, until it ends.
	Follow bool `json:"follow,omitempty"`
	// FromStart follows from the first attempt rather than the newest.
	FromStart bool `json:"from_start,omitempty"`
	// Poll is how often a followed log is read; 0 means 500ms.
	Poll time.Duration `json:"-"`
	// Banner, when set, is told each time a new attempt's log begins.
	Banner func(a AttemptView) `json:"-"`
	// Step, when set and following, is told each step of the job as the
	// controller records it: the placement chosen and the instances
	// requested, a failed launch try, what a launch waits for (SSH on a
	// node), the cluster up, setup or run started, an attempt's end and
	// decision, the back-off before the next. One sentence each.
	Step func(text string) `json:"-"`
}

// ReleaseView is what `jobs release` did.
type ReleaseView struct {
	JobID     int64     `json:"job_id"`
	Cluster   string    `json:"cluster"`
	KeptUntil time.Time `json:"kept_until"`
}

// ShellRequest is `jobs ssh`.
type ShellRequest struct {
	ID int64
	// Node is the node's rank (0 unless --node).
	Node int
	// Argv is the command to run; empty opens an interactive shell.
	Argv  []string
	Stdio provision.Stdio
}

// Asker is who asks for a verb: the name recorded as a job's owner, a
// retry's requested_by and a cancel's cancelled_by, and whether the
// owner check lets them act on others' jobs.
type Asker struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin"`
}

// ReplicaView is one replica of the controller sharing the store, as
// `sortie replicas status -o json` prints it.
type ReplicaView struct {
	Name        string    `json:"name"`
	ID          string    `json:"id"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// HeartbeatAge is how long ago the last heartbeat was, in seconds.
	HeartbeatAge float64 `json:"heartbeat_age_s"`
	// LeaseTTL is how long its leases last unless renewed, in seconds.
	LeaseTTL float64 `json:"lease_ttl_s"`
	// Live is false once the heartbeat is older than the TTL: the
	// replica is dead, and its jobs go to the others.
	Live bool `json:"live"`
	// Jobs is how many unfinished jobs it holds a live lease on.
	Jobs int `json:"jobs"`
}

// SSHKey is sortie's SSH identity: what the VM clouds log in to their
// instances with.
type SSHKey struct {
	// Path is the private key's file; the public half is Path + ".pub".
	Path string `json:"path"`
	// PublicKey is one authorized_keys line.
	PublicKey string `json:"public_key"`
	// Created says this call generated it.
	Created bool `json:"created"`
}

// PriorityRequest is `jobs priority ID N`: the waiting job's new priority.
type PriorityRequest struct {
	Priority int `json:"priority"`
}

// PriorityView is what `jobs priority` did.
type PriorityView struct {
	JobID    int64 `json:"job_id"`
	Priority int   `json:"priority"`
	Previous int   `json:"previous"`
}
