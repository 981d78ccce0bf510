package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"sortie/controller/service"
)

// CancelOptions are `jobs cancel`'s flags.
type CancelOptions struct {
	IDs  []int64
	Name string
	All  bool
}

// NewCmdCancel builds `jobs cancel`.
func NewCmdCancel(f *Factory, runF func(context.Context, *CancelOptions) error) *cobra.Command {
	opts := &CancelOptions{}
	cmd := &cobra.Command{
		Use:   "cancel ID... | -n NAME | --all",
		Short: "Cancel jobs: their running attempts are stopped and their clusters torn down",
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			opts.IDs = ids
			given := 0
			for _, b := range []bool{len(ids) > 0, opts.Name != "", opts.All} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usageErrorf("name the jobs to cancel in one way: IDs, -n NAME or --all")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCancel(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Name, "name", "n", "", "cancel the unfinished jobs with this name (a pattern)")
	cmd.Flags().BoolVar(&opts.All, "all", false, "cancel every unfinished job")
	return cmd
}

func runCancel(ctx context.Context, f *Factory, opts *CancelOptions) error {
	return withService(ctx, f, func(svc Service) error {
		marked, err := svc.Cancel(ctx, service.CancelRequest{IDs: opts.IDs, Name: opts.Name, All: opts.All})
		if err != nil {
			return err
		}
		if len(marked) == 0 {
			fmt.Fprintln(f.Err, "No unfinished job to cancel.")
			if len(opts.IDs) > 0 {
				return &exitError{code: ExitFailed}
			}
			return nil
		}
		for _, id := range marked {
			fmt.Fprintf(f.Out, "Cancelling job %d.\n", id)
		}
		return nil
	})
}
