package controllercli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"sortie/cmd/internal/cli"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/service"
	"sortie/controller/store"
)

// usageCmd is `server usage`: each user with running or waiting jobs,
// what they hold against the limits, and their fair share, read from the
// server's store (every user: this is the server's machine).
func usageCmd(h string, out io.Writer, storePath *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "usage [-o json]",
		Short: "Show each user's running jobs, nodes, vCPUs and GPUs against the limits, their weight and share of recent use, and their waiting jobs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return &contract.UsageError{Err: fmt.Errorf("-o %q: give table or json", output)}
			}
			cfg, st, err := openServerStore(cmd.Context(), h, *storePath)
			if err != nil {
				return err
			}
			defer st.Close()
			rows, err := service.UsageRows(cmd.Context(), cfg, st, time.Now(), "")
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return cli.PrintUsage(out, rows)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// openServerStore opens the store `server` serves: --store, else
// config.yaml's (controller.store, SORTIE_STORE, the home's state.db).
func openServerStore(ctx context.Context, h, storePath string) (config.Config, *store.Store, error) {
	if err := home.Make(h); err != nil {
		return config.Config{}, nil, err
	}
	cfg, err := config.Load(h, os.Getenv)
	if err != nil {
		return cfg, nil, err
	}
	u := storePath
	if u == "" {
		u = cfg.StoreURL()
	}
	st, err := store.OpenURL(ctx, u, nil)
	return cfg, st, err
}
