package controllercli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/store"
	"sortie/strategy"
)

// usageCmd is `server usage`: each user with running or waiting jobs,
// what they hold against the limits, and their fair share, read from the
// server's store.
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
			now := time.Now()
			halfLife := cfg.FairShare.HalfLife.D()
			if halfLife == 0 {
				halfLife = config.DefaultFairShareHalfLife
			}
			f, err := st.AdmissionFacts(cmd.Context(), now.Add(-strategy.UseWindow(halfLife)))
			if err != nil {
				return err
			}
			limits := cfg.Limits.Strategy()
			rows := contract.UsageViews(strategy.Usage(strategy.AdmitInput{Now: now, Waiting: f.Waiting, Held: f.Held,
				Limits: limits, Weights: cfg.FairShare.Weights, Used: f.Used, HalfLife: halfLife}), limits.Server)
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return printUsage(out, rows, contract.LimitAmounts(limits.Server), halfLife)
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

// printUsage writes the usage table: a line of what the server holds
// against its limit, then a row per user, each count "held/limit" (the
// user's limit; "held" alone when it has none).
func printUsage(w io.Writer, rows []contract.UsageView, server *contract.UsageAmounts, halfLife time.Duration) error {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No user has jobs running or waiting.")
		return nil
	}
	total := contract.UsageAmounts{RunningJobs: new(int), Nodes: new(int), VCPUs: new(int), GPUs: map[string]int{}}
	for _, r := range rows {
		*total.RunningJobs += *r.Held.RunningJobs
		*total.Nodes += *r.Held.Nodes
		*total.VCPUs += *r.Held.VCPUs
		for g, n := range r.Held.GPUs {
			total.GPUs[g] += n
		}
	}
	fmt.Fprintf(w, "Server: %s running jobs, %s nodes, %s vCPUs, GPUs %s (held/limit); use decays with a half-life of %s\n",
		heldOf(*total.RunningJobs, limitOf(server, func(a *contract.UsageAmounts) *int { return a.RunningJobs })),
		heldOf(*total.Nodes, limitOf(server, func(a *contract.UsageAmounts) *int { return a.Nodes })),
		heldOf(*total.VCPUs, limitOf(server, func(a *contract.UsageAmounts) *int { return a.VCPUs })),
		gpusOf(total.GPUs, server), halfLife)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tJOBS\tNODES\tVCPUS\tGPUS\tWEIGHT\tUSE (h)\tSHARE\tWAITING")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%g\t%.1f\t%.1f%%\t%d\n", r.User,
			heldOf(*r.Held.RunningJobs, limitOf(r.UserLimit, func(a *contract.UsageAmounts) *int { return a.RunningJobs })),
			heldOf(*r.Held.Nodes, limitOf(r.UserLimit, func(a *contract.UsageAmounts) *int { return a.Nodes })),
			heldOf(*r.Held.VCPUs, limitOf(r.UserLimit, func(a *contract.UsageAmounts) *int { return a.VCPUs })),
			gpusOf(r.Held.GPUs, r.UserLimit), r.Weight, r.DecayedUse, 100*r.Share, r.Waiting)
	}
	return tw.Flush()
}

func limitOf(l *contract.UsageAmounts, field func(*contract.UsageAmounts) *int) *int {
	if l == nil {
		return nil
	}
	return field(l)
}

// heldOf is "3/50", or "3" without a limit.
func heldOf(n int, limit *int) string {
	if limit == nil {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d/%d", n, *limit)
}

// gpusOf is "A100 8/16, H100 2": each type held or limited, by name; "-"
// for none.
func gpusOf(held map[string]int, limit *contract.UsageAmounts) string {
	types := map[string]bool{}
	for g := range held {
		types[g] = true
	}
	if limit != nil {
		for g := range limit.GPUs {
			types[g] = true
		}
	}
	if len(types) == 0 {
		return "-"
	}
	var parts []string
	for _, g := range slices.Sorted(maps.Keys(types)) {
		var l *int
		if limit != nil {
			if v, ok := limit.GPUs[g]; ok {
				l = &v
			}
		}
		parts = append(parts, g+" "+heldOf(held[g], l))
	}
	return strings.Join(parts, ", ")
}
