package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sortie/controller/lifecycle"
	"sortie/controller/service"
	"sortie/strategy"
)

// LaunchOptions are `jobs launch`'s flags.
type LaunchOptions struct {
	File        string
	Name        string
	Detach      bool
	Envs        []string
	Cloud       string
	Region      string
	Zone        string
	UseSpot     bool
	UseSpotSet  bool
	RetryFailed bool
}

// NewCmdLaunch builds `jobs launch`.
func NewCmdLaunch(f *Factory, runF func(context.Context, *LaunchOptions) error) *cobra.Command {
	opts := &LaunchOptions{}
	cmd := &cobra.Command{
		Use:   "launch TASK.yaml",
		Short: "Launch a managed job from a task file",
		Long: "Launch a managed job. Without -d, follow its logs and exit 0 only if it ends SUCCEEDED.\n" +
			"Exit status: 0 success, 1 the job failed, 2 invalid task or usage, 3 the inputs are a known failure.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			opts.UseSpotSet = cmd.Flags().Changed("use-spot")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runLaunch(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Name, "name", "n", "", "job name (default: the task's name)")
	fl.BoolVarP(&opts.Detach, "detach-run", "d", false, "submit and return without following the logs")
	fl.StringArrayVar(&opts.Envs, "env", nil, "set an environment variable for the task, KEY=VALUE (repeatable)")
	fl.StringVar(&opts.Cloud, "cloud", "", "override resources.cloud")
	fl.StringVar(&opts.Region, "region", "", "override resources.region")
	fl.StringVar(&opts.Zone, "zone", "", "override resources.zone")
	fl.BoolVar(&opts.UseSpot, "use-spot", false, "override resources.use_spot")
	fl.BoolVar(&opts.RetryFailed, "retry-failed", false, "run even if these inputs already failed")
	return cmd
}

func parseEnvs(envs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range envs {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--env: %q is not KEY=VALUE (e.g. --env SEED=7)", e)
		}
		out[k] = v
	}
	return out, nil
}

func runLaunch(ctx context.Context, f *Factory, opts *LaunchOptions) error {
	envs, err := parseEnvs(opts.Envs)
	if err != nil {
		return err
	}
	req := service.LaunchRequest{File: opts.File, Name: opts.Name, Envs: envs, Cloud: opts.Cloud,
		Region: opts.Region, Zone: opts.Zone, RetryFailed: opts.RetryFailed}
	if opts.UseSpotSet {
		req.UseSpot = &opts.UseSpot
	}
	return withService(ctx, f, func(svc Service) error {
		job, err := svc.Launch(ctx, req)
		if err != nil {
			return err
		}
		fmt.Fprintf(f.Err, "Job %d (%s) submitted.\n", job.ID, job.Name)
		if opts.Detach {
			fmt.Fprintf(f.Out, "%d\n", job.ID)
			return nil
		}
		return followToEnd(ctx, f, svc, job.ID)
	})
}

// followToEnd prints a job's logs, attempt after attempt, until it ends, and
// turns its final status into the exit status.
func followToEnd(ctx context.Context, f *Factory, svc Service, id int64) error {
	banner := func(a service.AttemptView) {
		fmt.Fprintf(f.Err, "== job %d, task %d, attempt %d ==\n", id, a.Task, a.Attempt)
	}
	if err := svc.Logs(ctx, service.LogsRequest{ID: id, Follow: true, FromStart: true, Banner: banner}, f.Out); err != nil {
		return err
	}
	d, err := svc.Show(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(f.Err, "Job %d ended %s (recoveries %d, failures %s, exit codes %s).\n",
		d.ID, d.Status, d.RecoveryCount, failures(d), strategy.FormatExitCodes(d.ExitCodes))
	if d.FailureReason != nil {
		fmt.Fprintf(f.Err, "Reason: %s\n", *d.FailureReason)
	}
	if d.Status != lifecycle.Succeeded {
		return &exitError{code: ExitFailed}
	}
	return nil
}
