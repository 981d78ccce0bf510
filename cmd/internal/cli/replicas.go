package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// NewCmdReplicas builds `replicas status`: the replicas of the controller
// sharing the store, their heartbeats and the jobs each holds.
func NewCmdReplicas(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "replicas", Short: "Inspect the replicas of the controller that share the store"}
	var output string
	status := &cobra.Command{
		Use:   "status",
		Short: "List the replicas: host, pid, heartbeat age, lease TTL and jobs held",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			svc, err := f.Local(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			rs, err := svc.Replicas(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				return printJSON(f.Out, rs)
			}
			if len(rs) == 0 {
				fmt.Fprintln(f.Err, "No replicas: the controller of this home, if any, drives every job (sortie controller status).")
				return nil
			}
			t := newTable(f.Out, "NAME", "HOST", "PID", "STARTED", "HEARTBEAT", "TTL", "STATE", "JOBS")
			for _, r := range rs {
				state := "live"
				if !r.Live {
					state = "dead"
				}
				hb := time.Duration(r.HeartbeatAge * float64(time.Second)).Round(100 * time.Millisecond)
				t.row(r.Name, r.Host, fmt.Sprint(r.PID), ago(f.Now(), r.StartedAt), hb.String()+" ago",
					time.Duration(r.LeaseTTL*float64(time.Second)).String(), state, fmt.Sprint(r.Jobs))
			}
			return t.flush()
		},
	}
	status.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.AddCommand(status)
	return cmd
}
