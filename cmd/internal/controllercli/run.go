package controllercli

import (
	"errors"
	"io"
	"log/slog"
	"os"
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
		Use:   "run [--store URL] [--replica NAME [--lease-ttl D]]",
		Short: "Run the controller in the foreground",
		Long: `Run the controller in the foreground. Without --replica it is the one
controller of SORTIE_HOME (the CLI starts it when needed). With --replica
NAME it is one of several replicas sharing the jobs of one store, each
driving the jobs it holds a lease on; replicas share the home directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if storeURL != "" {
				// What the controller reads, as the CLI that starts it
				// passes it on: SORTIE_STORE over config.yaml.
				os.Setenv("SORTIE_STORE", storeURL)
			}
			log := slog.New(slog.NewJSONHandler(errw, nil))
			if replica == "" {
				if cmd.Flags().Changed("lease-ttl") {
					return errors.New("--lease-ttl is for replicas: give --replica NAME too")
				}
				return controller.Serve(cmd.Context(), h, log, all.Clouds())
			}
			return controller.ServeReplica(cmd.Context(), h, controller.ReplicaOptions{Name: replica, TTL: ttl}, log, all.Clouds(), controller.ServeOptions{})
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "", "where the jobs are kept: postgres://USER:PASSWORD@HOST:PORT/DATABASE or sqlite:/PATH (default: SORTIE_STORE, controller.store, else $SORTIE_HOME/state.db)")
	cmd.Flags().StringVar(&replica, "replica", "", "run as the replica NAME of a store shared with other replicas")
	cmd.Flags().DurationVar(&ttl, "lease-ttl", controller.DefaultLeaseTTL, "how long a replica's leases last unless renewed (at least 3s)")
	return cmd
}
