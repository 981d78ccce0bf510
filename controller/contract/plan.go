package contract

// Plan is `jobs launch --dry-run`: what a launch would store and where it
// would run, found without storing or starting anything.
type Plan struct {
	Name string `json:"name"`
	// InputKey is the key a launch would store (known failures); nil
	// while inputs are missing.
	InputKey *string    `json:"input_key"`
	Tasks    []TaskPlan `json:"tasks"`
	// Warnings are the fields sortie accepts and ignores, one line each.
	Warnings []string `json:"warnings"`
	// Missing is what a launch would still refuse though the file is
	// valid, one problem a line: an env or secret without a value, a
	// local input that is not there, a bucket.
	Missing []string `json:"missing"`
}

// TaskPlan is one task of a plan.
type TaskPlan struct {
	Task     int     `json:"task"`
	Name     *string `json:"name"`
	NumNodes int     `json:"num_nodes"`
	// Placements are the task's candidates in the order a first launch
	// tries them.
	Placements []PlacementPlan `json:"placements"`
	Ports      []string        `json:"ports"`
	// Workdir is the absolute path of the directory uploaded to each node.
	Workdir *string `json:"workdir"`
	// WorkdirRepo is a workdir given as a git repository, cloned on each
	// node instead.
	WorkdirRepo *RepoPlan   `json:"workdir_repo"`
	FileMounts  []MountPlan `json:"file_mounts"`
	// Envs and Secrets are names only: values are never shown.
	Envs                []string `json:"envs"`
	Secrets             []string `json:"secrets"`
	Strategy            string   `json:"strategy"`
	MaxRestartsOnErrors int      `json:"max_restarts_on_errors"`
	RecoverOnExitCodes  []int    `json:"recover_on_exit_codes"`
	// MaxRecoveries and MaxDuration are the job's limits; nil when none.
	MaxRecoveries *int    `json:"max_recoveries"`
	MaxDuration   *string `json:"max_duration"`
	// MaxRestartsWithoutProgress is job_recovery.max_restarts_without_progress;
	// nil when none.
	MaxRestartsWithoutProgress *int `json:"max_restarts_without_progress"`
	// Escalate is job_recovery.escalate; nil when the task has none.
	Escalate *EscalatePlan `json:"escalate"`
}

// EscalatePlan is a task's job_recovery.escalate as the file gives it.
type EscalatePlan struct {
	OnExitCodes []int `json:"on_exit_codes"`
	// Memory and CPUs are factors ("2x"); nil when not grown.
	Memory    *string `json:"memory"`
	MaxMemory *string `json:"max_memory"`
	CPUs      *string `json:"cpus"`
	MaxCPUs   *string `json:"max_cpus"`
	// Accelerators are the rungs to climb, in order ("A100:1").
	Accelerators []string `json:"accelerators"`
}

// PlacementPlan is one candidate placement and what would be asked there.
type PlacementPlan struct {
	Cloud  string  `json:"cloud"`
	Region *string `json:"region"`
	Zone   *string `json:"zone"`
	// ResolvedBy is "sortie" when the placement was checked against the
	// cloud's offer, "controller" when the cloud can only be asked by the
	// controller program: the placement is listed as requested.
	ResolvedBy   string  `json:"resolved_by"`
	InstanceType *string `json:"instance_type"`
	CPUs         *string `json:"cpus"`
	Memory       *string `json:"memory"`
	Accelerators *string `json:"accelerators"`
	UseSpot      bool    `json:"use_spot"`
	DiskSize     *int    `json:"disk_size"`
	DiskTier     *string `json:"disk_tier"`
	NetworkTier  *string `json:"network_tier"`
	ImageID      *string `json:"image_id"`
	// ImageLookup is, for a SkyPilot image tag (image_id
	// "skypilot:gpu-ubuntu-2004"), how the cloud is asked at launch for
	// the image the tag becomes; null for any other image_id.
	ImageLookup *string `json:"image_lookup"`
	// PricePerHour is one node's price per hour there in dollars, and
	// HourlyCost the placement's (every node): what an attempt there is
	// expected to cost an hour, from the prices sortie read before; null
	// when none is known.
	PricePerHour *float64 `json:"price_per_hour"`
	HourlyCost   *float64 `json:"hourly_cost"`
}

// RepoPlan is a git repository at a ref ("" is the remote's default branch).
type RepoPlan struct {
	URL string  `json:"url"`
	Ref *string `json:"ref"`
}

// MountPlan is one local file_mounts entry.
type MountPlan struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}
