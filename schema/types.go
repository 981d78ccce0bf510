// Package schema holds the task YAML types, their defaults and validation, and
// the canonical input key of a task. It imports nothing else of sortie's: task
// files are read by every program.
package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Pipeline is one task file: one or more tasks run in order as one job.
type Pipeline struct {
	// Name names the job; from a leading name-only document, else the first task's name.
	Name  string  `json:"name,omitempty"`
	Tasks []*Task `json:"tasks"`
	// Warnings has one line per field of the file that was accepted and
	// ignored, each starting with the field's path. Not stored.
	Warnings []string `json:"-"`
}

// The bounds of a job's priority.
// DefaultPriority, in the middle as SkyPilot's, leaves room both ways.
const (
	MinPriority     = 0
	MaxPriority     = 1000
	DefaultPriority = 500
)

// Priority is the job's priority: the one its tasks name (parsing refuses
// tasks that name different ones), else DefaultPriority.
func (p *Pipeline) Priority() int {
	for _, t := range p.Tasks {
		if t.Priority != nil {
			return *t.Priority
		}
	}
	return DefaultPriority
}

// Task is one document of a task file. Field names and shapes follow SkyPilot's
// task YAML for the subset sortie supports.
type Task struct {
	Name      string    `json:"name,omitempty"`
	Resources Resources `json:"resources"`
	NumNodes  int       `json:"num_nodes,omitempty"`
	Workdir   string    `json:"workdir,omitempty"`
	// WorkdirRepo is workdir given as {url, ref}: a git repository cloned
	// at ref on every node, in place of a local directory. At most one of
	// Workdir and WorkdirRepo is set.
	WorkdirRepo *GitRepo          `json:"workdir_repo,omitempty"`
	FileMounts  map[string]string `json:"file_mounts,omitempty"`
	// StorageMounts are the file_mounts whose value is a bucket mapping
	// ({name, source, store, mode, persistent}), by path on the node.
	StorageMounts map[string]StorageMount `json:"storage_mounts,omitempty"`
	Envs          map[string]string       `json:"envs,omitempty"`
	// RequiredEnvs are the envs the file gives no value (null): SkyPilot's
	// "required at launch", filled by --env or --env-file. A task with any
	// left cannot launch (Pipeline.Unresolved).
	RequiredEnvs []string `json:"required_envs,omitempty"`
	// Secrets maps a name to nil (taken from the environment at launch) or a value.
	// Secret values are never stored nor part of the input key.
	Secrets map[string]*string `json:"secrets,omitempty"`
	Setup   string             `json:"setup,omitempty"`
	Run     string             `json:"run,omitempty"`
	// Notify is where the job's events are posted while this task is its
	// current one; nil means config.yaml's default webhooks. It is not
	// part of the input key: it changes nothing the task runs.
	Notify *Notify `json:"notify,omitempty"`
	// Priority orders the job among waiting jobs, 0 to 1000, higher
	// first (SkyPilot's priority, at the top of the task or under
	// resources); nil is DefaultPriority. A job has one priority:
	// Pipeline.Priority. It is not part of the input key.
	Priority *int `json:"priority,omitempty"`
}

// GitRepo is a git repository at a ref (a branch, tag or commit; empty
// is the remote's default branch).
type GitRepo struct {
	URL string `json:"url"`
	Ref string `json:"ref,omitempty"`
}

// StorageMount is a bucket mounted or copied at a path on the node.
type StorageMount struct {
	// Name is the bucket's name; Source is a local path or bucket URL
	// uploaded to it or read from.
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	// Sources is source given as a list of local paths (SkyPilot's
	// several sources for one bucket): each is uploaded under its base
	// name. Source is "" then. In JSON both are "source", as the file
	// writes them.
	Sources []string `json:"-"`
	// Store is s3 or gcs; Mode is COPY, MOUNT or MOUNT_CACHED.
	Store string `json:"store,omitempty"`
	Mode  string `json:"mode,omitempty"`
	// Persistent false deletes the bucket when the job ends; nil is true.
	Persistent *bool `json:"persistent,omitempty"`
}

// Resources is what a task asks of the cloud, and how its job recovers.
type Resources struct {
	Cloud        string `json:"cloud,omitempty"`
	Infra        string `json:"infra,omitempty"`
	Region       string `json:"region,omitempty"`
	Zone         string `json:"zone,omitempty"`
	InstanceType string `json:"instance_type,omitempty"`
	// CPUs and Memory are "N" or "N+" (at least N); numbers in YAML become strings.
	CPUs   string `json:"cpus,omitempty"`
	Memory string `json:"memory,omitempty"`
	// Accelerators is normalised to name -> count from "A100:1", {A100: 1} or a list.
	Accelerators map[string]int `json:"accelerators,omitempty"`
	// AcceleratorShare is a fraction (0 < share < 1) of the one
	// accelerator in Accelerators (count 1), SkyPilot's "A100:0.5": asked
	// only of a cloud that shares GPUs (Cloud.SharesAccelerators). Zero
	// asks whole accelerators.
	AcceleratorShare float64 `json:"-"`
	UseSpot          bool    `json:"use_spot,omitempty"`
	DiskSize         int     `json:"disk_size,omitempty"`
	// MaxHourlyCost skips candidates whose node costs more per hour, in
	// dollars (SkyPilot's field); zero means no limit.
	MaxHourlyCost float64 `json:"max_hourly_cost,omitempty"`
	// ImageID is the image to boot; "docker:IMAGE" instead runs the task's
	// setup and run inside that container image on the node.
	ImageID string `json:"image_id,omitempty"`
	// Ports are opened to the cluster's nodes, each "8080" or a range
	// "10000-10010".
	Ports []string `json:"ports,omitempty"`
	// DiskTier is low, medium, high, ultra or best; NetworkTier is
	// standard or best. Each cloud maps them to its own offerings.
	DiskTier    string `json:"disk_tier,omitempty"`
	NetworkTier string `json:"network_tier,omitempty"`
	// Labels tag the cluster's VMs: tags on AWS, labels on GCP.
	Labels map[string]string `json:"labels,omitempty"`
	// AnyOf and Ordered are candidate placements; each item overrides fields above.
	AnyOf   []Resources `json:"any_of,omitempty"`
	Ordered []Resources `json:"ordered,omitempty"`
	// PlacementOrder is resources.placement: how the candidates are
	// ordered before the strategy applies. "" (written) keeps the order
	// the candidates come in; PlaceCheapest orders them by their current
	// price.
	PlacementOrder string       `json:"placement,omitempty"`
	JobRecovery    *JobRecovery `json:"job_recovery,omitempty"`
}

// The values of resources.placement.
const (
	// PlaceWritten tries the candidates in the order they come in (the
	// file's, then the provider's); the same as leaving placement out.
	PlaceWritten = "written"
	// PlaceCheapest tries the cheapest candidate first, by the price
	// sortie last read for it (spot prices per zone), candidates with no
	// known price last in their own order.
	PlaceCheapest = "cheapest"
)

// Strategy names a placement strategy after a preemption.
type Strategy string

const (
	Failover        Strategy = "FAILOVER"
	EagerNextRegion Strategy = "EAGER_NEXT_REGION"
	// NoRecovery never recovers: a preemption or a lost node ends the job.
	NoRecovery Strategy = "NONE"
)

// JobRecovery is resources.job_recovery: a bare strategy string or this object.
type JobRecovery struct {
	// Strategy is upper-cased on parse; empty means EAGER_NEXT_REGION.
	Strategy Strategy `json:"strategy,omitempty"`
	// MaxRestartsOnErrors is how many failures with unlisted exit codes restart
	// the task; zero means none do.
	MaxRestartsOnErrors int `json:"max_restarts_on_errors"`
	// RecoverOnExitCodes restart the task whenever any node exits with one of
	// them, without touching MaxRestartsOnErrors. A scalar in YAML becomes a list.
	RecoverOnExitCodes []int `json:"recover_on_exit_codes,omitempty"`
	// MaxRecoveries is how many preemptions or lost nodes the task recovers
	// from; nil means no limit (0 is refused on parse: that is strategy NONE).
	MaxRecoveries *int `json:"max_recoveries,omitempty"`
	// MaxDuration is a wall-clock limit on the job, counted from its
	// submission through every recovery, restart and back-off; zero means
	// none.
	MaxDuration Duration `json:"max_duration,omitempty"`
	// MaxCost is the most the job may cost, in dollars, through every
	// recovery and restart; zero means no limit.
	MaxCost float64 `json:"max_cost,omitempty"`
	// Escalate restarts the task on a bigger instance after a failure
	// with one of its exit codes; nil means never.
	Escalate *Escalate `json:"escalate,omitempty"`
	// KeepOnFailure is how long the last attempt's cluster of a job that
	// ends FAILED or FAILED_SETUP is kept, for `jobs ssh`, before it is
	// torn down; zero means it is torn down at once.
	KeepOnFailure Duration `json:"keep_on_failure,omitempty"`
	// TerminationGrace is how long a task told to stop by a preemption
	// notice has between SIGTERM and SIGKILL (never past the notice's
	// deadline); zero means the node agent's default, 30 s.
	TerminationGrace Duration `json:"termination_grace,omitempty"`
	// ConfirmFailures is how many times a failure that would become a
	// known failure is run again, on another placement where the task
	// allows one, before it does: 0 (none) or 1.
	ConfirmFailures int `json:"confirm_failures,omitempty"`
	// ConfirmCountsAsRestart makes the confirmation run a restart on
	// error: it adds to restarts_on_errors and is made only while
	// max_restarts_on_errors has one left.
	ConfirmCountsAsRestart bool `json:"confirm_counts_as_restart,omitempty"`
	// MaxRestartsWithoutProgress is how many restarts and recoveries in a
	// row the task may make without reporting progress (a number written
	// to $SORTIE_PROGRESS above every number reported before); the next
	// one ends the job FAILED as a crash loop. nil means no limit.
	MaxRestartsWithoutProgress *int `json:"max_restarts_without_progress,omitempty"`
	// OnDemandAfter switches a spot task to on-demand after this many
	// preemptions: the recovery from the last of them, and every later
	// attempt of the task, launch on-demand. Zero means never.
	OnDemandAfter int `json:"on_demand_after,omitempty"`
	// OnDemandAfterCost switches a spot task to on-demand at the
	// preemption after which its preempted attempts have cost more than
	// on-demand would have for the longest of them.
	OnDemandAfterCost bool `json:"on_demand_after_cost,omitempty"`
}

// MaxTerminationGrace is the longest job_recovery.termination_grace: the
// longest warning a cloud gives (AWS's two minutes) with room to spare.
const MaxTerminationGrace = 10 * time.Minute

// Duration is a time.Duration written as Go writes it ("1h30m0s") in the
// stored and shown spec, so that the spec parses again as a task file.
type Duration time.Duration

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String is the duration the way the user wrote it, as far as Go can say it:
// "12h", "1h30m", "90s".
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Placement is where one attempt runs.
type Placement struct {
	Cloud  string `json:"cloud"`
	Region string `json:"region"`
	Zone   string `json:"zone,omitempty"`
}

func (p Placement) String() string {
	s := p.Cloud + "/" + p.Region
	if p.Zone != "" {
		s += "/" + p.Zone
	}
	return s
}

// LocalSource is one local path a storage mount uploads at launch, and
// its field under the mount: "source", or "source[i]" of a list.
type LocalSource struct {
	Field, Path string
}

// LocalSources are the local paths the mount uploads: its source when it
// is a local path, else each of its sources; none for a bucket URL.
func (sm StorageMount) LocalSources() []LocalSource {
	if len(sm.Sources) > 0 {
		out := make([]LocalSource, len(sm.Sources))
		for i, s := range sm.Sources {
			out[i] = LocalSource{Field: index("source", i), Path: s}
		}
		return out
	}
	if sm.Source == "" || isURL(sm.Source) {
		return nil
	}
	return []LocalSource{{Field: "source", Path: sm.Source}}
}

// MapSources returns sm with each local source replaced by f(field, path).
func (sm StorageMount) MapSources(f func(field, path string) string) StorageMount {
	if len(sm.Sources) > 0 {
		out := make([]string, len(sm.Sources))
		for i, s := range sm.Sources {
			out[i] = f(index("source", i), s)
		}
		sm.Sources = out
		return sm
	}
	if sm.Source != "" && !isURL(sm.Source) {
		sm.Source = f("source", sm.Source)
	}
	return sm
}

// storageMountJSON is StorageMount without its methods, for its own.
type storageMountJSON StorageMount

// MarshalJSON writes several sources as the file does: source as a list.
func (sm StorageMount) MarshalJSON() ([]byte, error) {
	if len(sm.Sources) == 0 {
		return json.Marshal(storageMountJSON(sm))
	}
	return json.Marshal(struct {
		storageMountJSON
		Source []string `json:"source"`
	}{storageMountJSON(sm), sm.Sources})
}

// UnmarshalJSON reads source as one path or URL, or a list of paths.
func (sm *StorageMount) UnmarshalJSON(b []byte) error {
	var raw struct {
		storageMountJSON
		Source json.RawMessage `json:"source"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*sm = StorageMount(raw.storageMountJSON)
	switch src := strings.TrimSpace(string(raw.Source)); {
	case src == "" || src == "null":
	case strings.HasPrefix(src, "["):
		return json.Unmarshal(raw.Source, &sm.Sources)
	default:
		return json.Unmarshal(raw.Source, &sm.Source)
	}
	return nil
}

// MarshalJSON writes a fraction of an accelerator as the file does:
// accelerators: {A100: 0.5}.
func (r Resources) MarshalJSON() ([]byte, error) {
	type plain Resources
	if r.AcceleratorShare == 0 {
		return json.Marshal(plain(r))
	}
	out := struct {
		plain
		Accelerators map[string]float64 `json:"accelerators,omitempty"`
	}{plain: plain(r), Accelerators: map[string]float64{}}
	for name := range r.Accelerators {
		out.Accelerators[name] = r.AcceleratorShare
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes: a count below 1 is a
// fraction of one accelerator.
func (r *Resources) UnmarshalJSON(b []byte) error {
	type plain Resources
	in := struct {
		*plain
		Accelerators map[string]float64 `json:"accelerators,omitempty"`
	}{plain: (*plain)(r)}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	r.Accelerators, r.AcceleratorShare = nil, 0
	for name, n := range in.Accelerators {
		if r.Accelerators == nil {
			r.Accelerators = map[string]int{}
		}
		if n > 0 && n < 1 {
			r.Accelerators[name], r.AcceleratorShare = 1, n
			continue
		}
		if n != math.Trunc(n) {
			return fmt.Errorf("accelerators.%s: %v is not a whole count", name, n)
		}
		r.Accelerators[name] = int(n)
	}
	return nil
}
