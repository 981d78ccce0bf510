package controllercli

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller"
	"sortie/controller/clouds/all"
)

// runCmd is `run`: the controller of the home, or with --replica one
// replica among several sharing a store.
func runCmd(h string, errw io.Writer) *cobra.Command {
	var replica, storeURL string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:   "run [--replica NAME [--store PATH] [--lease-ttl D]]",
		Short: "Run the controller in the foreground",
		Long: `Run the controller in the foreground. Without --replica it is the one
controller of SORTIE_HOME (the CLI starts it when needed). With --replica
NAME it is one of several replicas sharing the jobs of one store, each
driving the jobs it holds a lease on; replicas share the home directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log := slog.New(slog.NewJSONHandler(errw, nil))
			if replica == "" {
				if storeURL != "" || cmd.Flags().Changed("lease-ttl") {
					return errors.New("--store and --lease-ttl are for replicas: give --replica NAME too")
				}
				return controller.Serve(cmd.Context(), h, log, all.Clouds())
			}
			return controller.ServeReplica(cmd.Context(), h, storeURL, controller.ReplicaOptions{Name: replica, TTL: ttl}, log, all.Clouds())
		},
	}
	cmd.Flags().StringVar(&replica, "replica", "", "run as the replica NAME of a store shared with other replicas")
	cmd.Flags().StringVar(&storeURL, "store", "", "the shared store: a SQLite file's path (default SORTIE_HOME's state.db)")
	cmd.Flags().DurationVar(&ttl, "lease-ttl", controller.DefaultLeaseTTL, "how long a replica's leases last unless renewed (at least 3s)")
	return cmd
}
