package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"sortie/schema"
)

// PriorityOptions are `jobs priority`'s arguments.
type PriorityOptions struct {
	ID       int64
	Priority int
	Output   string
}

// NewCmdPriority builds `jobs priority ID N`.
func NewCmdPriority(f *Factory, runF func(context.Context, *PriorityOptions) error) *cobra.Command {
	opts := &PriorityOptions{}
	cmd := &cobra.Command{
		Use:   "priority ID N",
		Short: "Change a waiting job's priority (0-1000, higher first): the owner may lower it, an admin may also raise it",
		Long: "Change the priority of a job that waits to start (PENDING) under the server's limits: waiting jobs start\n" +
			"in priority order, then by fair share between users, then by submission. The job's owner may lower it;\n" +
			"only an admin may raise a job's priority or change another user's job. A job that started or ended keeps its own.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args[:1])
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(args[1])
			if err != nil || n < schema.MinPriority || n > schema.MaxPriority {
				return usageErrorf("priority %q: give a whole number from %d (lowest) to %d (highest); the default is %d",
					args[1], schema.MinPriority, schema.MaxPriority, schema.DefaultPriority)
			}
			if err := outputFlag(opts.Output); err != nil {
				return err
			}
			opts.ID, opts.Priority = ids[0], n
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPriority(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runPriority(ctx context.Context, f *Factory, opts *PriorityOptions) error {
	return withService(ctx, f, func(svc Service) error {
		v, err := svc.SetPriority(ctx, opts.ID, opts.Priority)
		if err != nil {
			return err
		}
		if opts.Output == "json" {
			return printJSON(f.Out, v)
		}
		if v.Previous == v.Priority {
			fmt.Fprintf(f.Out, "Job %d's priority is %d already.\n", v.JobID, v.Priority)
			return nil
		}
		fmt.Fprintf(f.Out, "Job %d's priority: %d -> %d.\n", v.JobID, v.Previous, v.Priority)
		return nil
	})
}
