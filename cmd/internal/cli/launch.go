package cli

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/schema"
	"sortie/strategy"
)

// LaunchOptions are `jobs launch`'s flags. The resource flags and their
// names are SkyPilot's `sky jobs launch` ones.
type LaunchOptions struct {
	File        string
	Name        string
	Detach      bool
	Envs        []string
	EnvFile     string
	Secrets     []string
	Cloud       string
	Region      string
	Zone        string
	Infra       string
	CPUs        string
	Memory      string
	GPUs        string
	Instance    string
	DiskSize    string
	DiskTier    string
	NetworkTier string
	ImageID     string
	Ports       []string
	Workdir     string
	NumNodes    int
	NumNodesSet bool
	Priority    int
	PrioritySet bool
	UseSpot     bool
	UseSpotSet  bool
	RetryFailed bool
	Yes         bool
	DryRun      bool
	Output      string
}

// NewCmdLaunch builds `jobs launch`.
func NewCmdLaunch(f *Factory, runF func(context.Context, *LaunchOptions) error) *cobra.Command {
	opts := &LaunchOptions{}
	var noSpot bool
	cmd := &cobra.Command{
		Use:   "launch TASK.yaml",
		Short: "Launch a managed job from a task file",
		Long: "Launch a managed job. Without -d, follow its logs (stdout) and steps (stderr) and exit 0 only if it ends SUCCEEDED;\n" +
			"Ctrl-C stops following, not the job (exit status 130): `sortie jobs logs -f ID` follows it again.\n" +
			"A relative workdir or file_mounts source is taken from the directory you run this in, as in SkyPilot.\n" +
			"The resource flags apply to every task of the file; \"none\" removes the field.\n" +
			"Exit status: 0 success, 1 the job failed, 2 invalid task or usage, 3 the inputs are a known failure, 130 Ctrl-C.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			fl := cmd.Flags()
			if fl.Changed("use-spot") && fl.Changed("no-use-spot") {
				return usageErrorf("--use-spot and --no-use-spot: give one of them")
			}
			opts.UseSpotSet = fl.Changed("use-spot") || fl.Changed("no-use-spot")
			if fl.Changed("no-use-spot") {
				opts.UseSpot = !noSpot
			}
			opts.NumNodesSet = fl.Changed("num-nodes")
			opts.PrioritySet = fl.Changed("priority")
			if err := outputFlag(opts.Output); err != nil {
				return err
			}
			if fl.Changed("output") && !opts.DryRun {
				return usageErrorf("-o is for --dry-run: a launch prints the job id (-d) or its logs")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runLaunch(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Name, "name", "n", "", "job name (default: the task's name)")
	fl.BoolVarP(&opts.Detach, "detach-run", "d", false, "submit and return without following the logs")
	fl.StringArrayVar(&opts.Envs, "env", nil, "set an env of every task, KEY=VALUE, or KEY to pass on your own $KEY (repeatable; wins over --env-file)")
	fl.StringVar(&opts.EnvFile, "env-file", "", "read envs from a dotenv file: KEY=VALUE lines, # comments, quotes")
	fl.StringArrayVar(&opts.Secrets, "secret", nil, "set a secret of every task, KEY=VALUE, or KEY to pass on your own $KEY (repeatable; never stored)")
	fl.StringVar(&opts.Infra, "infra", "", "override resources.infra: cloud, cloud/region or cloud/region/zone (e.g. aws/us-east-1)")
	fl.StringVar(&opts.Cloud, "cloud", "", "override resources.cloud")
	fl.StringVar(&opts.Region, "region", "", "override resources.region")
	fl.StringVar(&opts.Zone, "zone", "", "override resources.zone")
	fl.StringVar(&opts.CPUs, "cpus", "", "override resources.cpus: N (exactly) or N+ (at least)")
	fl.StringVar(&opts.Memory, "memory", "", "override resources.memory in GB: N, N+, 32GB+")
	fl.StringVar(&opts.GPUs, "gpus", "", "override resources.accelerators, e.g. A100:8 or A100 (one)")
	fl.StringVarP(&opts.Instance, "instance-type", "t", "", "override resources.instance_type")
	fl.StringVar(&opts.DiskSize, "disk-size", "", "override resources.disk_size: GB, or 1TB")
	fl.StringVar(&opts.DiskTier, "disk-tier", "", "override resources.disk_tier: low, medium, high, ultra or best")
	fl.StringVar(&opts.NetworkTier, "network-tier", "", "override resources.network_tier: standard or best")
	fl.StringVar(&opts.ImageID, "image-id", "", "override resources.image_id")
	fl.StringArrayVar(&opts.Ports, "ports", nil, "override resources.ports: a port or range LOW-HIGH (repeatable)")
	fl.StringVar(&opts.Workdir, "workdir", "", "override workdir: the directory uploaded to every node")
	fl.IntVar(&opts.NumNodes, "num-nodes", 0, "override num_nodes")
	fl.IntVar(&opts.Priority, "priority", 0, "the job's priority among waiting jobs, 0-1000, higher first (default: the task's, else 500)")
	fl.BoolVar(&opts.UseSpot, "use-spot", false, "override resources.use_spot")
	fl.BoolVar(&noSpot, "no-use-spot", false, "override resources.use_spot with false")
	fl.BoolVar(&opts.RetryFailed, "retry-failed", false, "run even if these inputs already failed")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "accepted for SkyPilot's sake: sortie never asks before a launch")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "validate, resolve placements and print the plan; store and start nothing")
	fl.StringVarP(&opts.Output, "output", "o", "table", "with --dry-run: output format, table or json")
	return cmd
}

// varFlags reads repeated KEY=VALUE or KEY flags: a KEY alone takes its
// value from the caller's environment, and must be set there, as in
// SkyPilot.
func varFlags(flag string, vals []string, lookup func(string) (string, bool)) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range vals {
		k, v, ok := strings.Cut(e, "=")
		if k == "" {
			return nil, usageErrorf("%s: %q is not KEY=VALUE or KEY (e.g. %s SEED=7)", flag, e, flag)
		}
		if !ok {
			if v, ok = lookup(k); !ok {
				return nil, usageErrorf("%s %s: %s is not set in your environment; set it, or pass %s %s=VALUE", flag, k, k, flag, k)
			}
		}
		out[k] = v
	}
	return out, nil
}

// launchRequest turns the flags into a request: --env wins over
// --env-file, and relative paths are taken from the working directory.
func launchRequest(f *Factory, opts *LaunchOptions) (contract.LaunchRequest, error) {
	lookup := f.lookupEnv
	envs := map[string]string{}
	if opts.EnvFile != "" {
		b, err := schema.ReadFile(opts.EnvFile)
		if err != nil {
			return contract.LaunchRequest{}, usageErrorf("--env-file: %v", err)
		}
		if envs, err = parseEnvFile(string(b), lookup); err != nil {
			return contract.LaunchRequest{}, usageErrorf("--env-file %s: %v", opts.EnvFile, err)
		}
	}
	flagEnvs, err := varFlags("--env", opts.Envs, lookup)
	if err != nil {
		return contract.LaunchRequest{}, err
	}
	maps.Copy(envs, flagEnvs)
	secrets, err := varFlags("--secret", opts.Secrets, lookup)
	if err != nil {
		return contract.LaunchRequest{}, err
	}
	dir, err := os.Getwd()
	if err != nil {
		return contract.LaunchRequest{}, fmt.Errorf("working directory: %w", err)
	}
	req := contract.LaunchRequest{File: opts.File, Dir: dir, Name: opts.Name, Envs: envs, Secrets: secrets,
		Cloud: opts.Cloud, Region: opts.Region, Zone: opts.Zone, Infra: opts.Infra,
		InstanceType: opts.Instance, CPUs: opts.CPUs, Memory: opts.Memory, GPUs: opts.GPUs, DiskSize: opts.DiskSize,
		DiskTier: opts.DiskTier, NetworkTier: opts.NetworkTier, ImageID: opts.ImageID, Ports: opts.Ports,
		Workdir: opts.Workdir, RetryFailed: opts.RetryFailed,
		Warn: func(w string) { fmt.Fprintln(f.Err, "warning:", printable(w)) }}
	if opts.UseSpotSet {
		req.UseSpot = &opts.UseSpot
	}
	if opts.PrioritySet {
		req.Priority = &opts.Priority
	}
	if opts.NumNodesSet {
		req.NumNodes = &opts.NumNodes
	}
	return req, nil
}

func runLaunch(ctx context.Context, f *Factory, opts *LaunchOptions) error {
	req, err := launchRequest(f, opts)
	if err != nil {
		return err
	}
	if opts.DryRun {
		plan, err := f.Plan(ctx, req)
		if err != nil {
			return err
		}
		if n := len(plan.Missing); n > 0 {
			fmt.Fprintf(f.Err, "note: the file is valid; a launch from here would be refused until %d missing input(s) are given (see the plan)\n", n)
		}
		if opts.Output == "json" {
			return printJSON(f.Out, plan)
		}
		return printPlan(f.Out, plan)
	}
	return withService(ctx, f, func(svc Service) error {
		job, err := svc.Launch(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.Err, "Job %d (%s) submitted.\n", job.ID, printable(job.Name))
		if opts.Detach {
			fmt.Fprintf(f.Out, "%d\n", job.ID)
			return nil
		}
		return followToEnd(ctx, f, svc, job.ID)
	})
}

// followToEnd prints a job's logs and steps, attempt after attempt, until
// it ends, and turns its final status into the exit status.
func followToEnd(ctx context.Context, f *Factory, svc Service, id int64) error {
	banner := func(a contract.AttemptView) {
		fmt.Fprintf(f.Err, "== job %d, task %d, attempt %d ==\n", id, a.Task, a.Attempt)
	}
	if err := follow(ctx, f, svc, contract.LogsRequest{ID: id, FromStart: true, Banner: banner}); err != nil {
		return err
	}
	d, err := svc.Show(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.Err, "Job %d ended %s (recoveries %d, failures %s, exit codes %s).\n",
		d.ID, d.Status, d.RecoveryCount, failures(d), strategy.FormatExitCodes(d.ExitCodes))
	if d.FailureReason != nil {
		fmt.Fprintf(f.Err, "Reason: %s\n", printable(*d.FailureReason))
	}
	if d.Status != lifecycle.Succeeded {
		return &exitError{code: ExitFailed}
	}
	return nil
}
