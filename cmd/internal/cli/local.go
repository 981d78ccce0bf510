package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sortie/schema"
)

// NewCmdLocal builds `local preempt|capacity`: the weather of the local
// provider, for tests and demos.
func NewCmdLocal(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "local", Short: "Make the weather of the local provider: preemptions and capacity"}
	var rank int
	var warn time.Duration
	preempt := &cobra.Command{
		Use:   "preempt JOB_ID [--node RANK] [--notice DURATION]",
		Short: "Take a running job's node away, as a spot interruption would; with --notice, after a warning",
		Long: `Take a running job's node away, as a spot interruption would.

With --notice D the node is warned first, as AWS (2m) and GCE (30s) warn
their spot VMs: the node's agent sends the task SIGTERM at once, the
controller starts the replacement launch, and the node is taken away D
later.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			svc, err := f.Local(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			if cmd.Flags().Changed("notice") {
				cluster, deadline, err := svc.Notice(cmd.Context(), ids[0], rank, warn)
				if err != nil {
					return err
				}
				fmt.Fprintf(f.Out, "Gave node %d of %s (job %d) a preemption notice; it is taken away at %s.\n",
					rank, printable(cluster), ids[0], deadline.UTC().Format(time.RFC3339))
				return nil
			}
			cluster, err := svc.Preempt(cmd.Context(), ids[0], rank)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.Out, "Preempted node %d of %s (job %d).\n", rank, printable(cluster), ids[0])
			return nil
		},
	}
	preempt.Flags().IntVar(&rank, "node", 0, "rank of the node to take away")
	preempt.Flags().DurationVar(&warn, "notice", 0, "warn the node this long before taking it away (e.g. 30s, 2m)")
	capacity := &cobra.Command{
		Use:   "capacity REGION/ZONE on|off",
		Short: "Turn capacity at a local region or zone on or off (launches there fail with a capacity error)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			region, zone, _ := strings.Cut(args[0], "/")
			if region == "" {
				return usageErrorf("%q is not REGION or REGION/ZONE (e.g. local/local-a)", args[0])
			}
			var on bool
			switch strings.ToLower(args[1]) {
			case "on":
				on = true
			case "off":
			default:
				return usageErrorf("%q is neither on nor off", args[1])
			}
			svc, err := f.Local(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			if err := svc.SetCapacity(schema.Placement{Cloud: "local", Region: region, Zone: zone}, on); err != nil {
				return err
			}
			fmt.Fprintf(f.Out, "Capacity in %s is %s.\n", args[0], strings.ToLower(args[1]))
			return nil
		},
	}
	cmd.AddCommand(preempt, capacity)
	return cmd
}
