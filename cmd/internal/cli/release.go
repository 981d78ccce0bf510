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
	cmd := &cobra.Command{
		Use:   "release ID",
		Short: "Tear down the cluster a failed job keeps (job_recovery.keep_on_failure) now",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			if err := outputFlag(opts.Output); err != nil {
				return err
			}
			opts.ID = ids[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRelease(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
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
