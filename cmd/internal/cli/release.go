package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// ReleaseOptions are `jobs release`'s arguments.
type ReleaseOptions struct {
	ID     int64
	Output string
}

// NewCmdRelease builds `jobs release`.
func NewCmdRelease(f *Factory, runF func(context.Context, *ReleaseOptions) error) *cobra.Command {
	opts := &ReleaseOptions{}
	return oneJobCmd("release ID", "Tear down the cluster a failed job keeps (job_recovery.keep_on_failure) now",
		&opts.ID, &opts.Output, func(ctx context.Context) error {
			if runF != nil {
				return runF(ctx, opts)
			}
			return runRelease(ctx, f, opts)
		})
}

func runRelease(ctx context.Context, f *Factory, opts *ReleaseOptions) error {
	return withService(ctx, f, func(svc Service) error {
		v, err := svc.Release(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.Output == "json" {
			return printJSON(f.Out, v)
		}
		fmt.Fprintf(f.Out, "Releasing cluster %s of job %d (it was kept until %s).\n", v.Cluster, v.JobID,
			v.KeptUntil.Local().Format("2006-01-02 15:04:05"))
		return nil
	})
}
