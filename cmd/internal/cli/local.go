package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sortie/schema"
)

// NewCmdLocal builds `local preempt|capacity`: the weather of the local
// provider, for tests and demos.
func NewCmdLocal(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "local", Short: "Make the weather of the local provider: preemptions and capacity"}
	var rank int
	preempt := &cobra.Command{
		Use:   "preempt JOB_ID",
		Short: "Take a running job's node away, as a spot interruption would",
		Args:  cobra.ExactArgs(1),
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
			cluster, err := svc.Preempt(cmd.Context(), ids[0], rank)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.Out, "Preempted node %d of %s (job %d).\n", rank, printable(cluster), ids[0])
			return nil
		},
	}
	preempt.Flags().IntVar(&rank, "node", 0, "rank of the node to take away")
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
