package cli

import (
	"github.com/spf13/cobra"

	"sortie/controller/contract"
)

// LogsOptions are `jobs logs`'s flags.
type LogsOptions struct {
	ID      int64
	Attempt int
	Task    int
	Follow  bool
}

// NewCmdLogs builds `jobs logs`.
func NewCmdLogs(f *Factory) *cobra.Command {
	opts := &LogsOptions{}
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Print a job's logs (the newest attempt unless --attempt); kept after the cluster is gone",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			if opts.Attempt < 0 {
				return usageErrorf("--attempt: %d is not an attempt number (1 is the first)", opts.Attempt)
			}
			opts.ID = ids[0]
			return withJobsService(cmd.Context(), f, func(svc Service) error {
				req := contract.LogsRequest{ID: opts.ID, Attempt: opts.Attempt, Task: opts.Task}
				if opts.Follow {
					return follow(cmd.Context(), f, svc, req)
				}
				return svc.Logs(cmd.Context(), req, f.Out)
			})
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&opts.Attempt, "attempt", 0, "attempt number (1-based) of the task; default the newest")
	fl.IntVar(&opts.Task, "task", 0, "task index within a pipeline, with --attempt")
	fl.BoolVarP(&opts.Follow, "follow", "f", false, "keep printing until the job ends, with its steps on stderr; Ctrl-C stops following, not the job")
	return cmd
}
