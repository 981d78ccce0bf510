package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
)

// NewCmdUsage builds `server usage [-o json]` through the server the CLI
// speaks to (SORTIE_API_URL or a login): an admin sees every user, any
// other user their own row and the server's total.
func NewCmdUsage(f *Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "usage [-o json]",
		Short: "Show each user's running jobs, nodes, vCPUs and GPUs against the limits, their weight and share of recent use, and their waiting jobs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				rows, err := svc.Usage(cmd.Context())
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, orEmptyList(rows))
				}
				return PrintUsage(f.Out, rows)
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// PrintUsage writes the usage table: a line of what the server holds
// against its limit, then a row per user, each count "held/limit" (the
// user's limit; "held" alone when it has none).
func PrintUsage(w io.Writer, rows []contract.UsageView) error {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No user has jobs running or waiting.")
		return nil
	}
	total, server := rows[0].ServerHeld, rows[0].ServerLimit
	halfLife := time.Duration(rows[0].HalfLifeHours * float64(time.Hour)).Round(time.Second)
	fmt.Fprintf(w, "Server: %s running jobs, %s nodes, %s vCPUs, GPUs %s, %s an hour (held/limit); use decays with a half-life of %s\n",
		heldOf(intOr0(total.RunningJobs), limitOf(server, func(a *contract.UsageAmounts) *int { return a.RunningJobs })),
		heldOf(intOr0(total.Nodes), limitOf(server, func(a *contract.UsageAmounts) *int { return a.Nodes })),
		heldOf(intOr0(total.VCPUs), limitOf(server, func(a *contract.UsageAmounts) *int { return a.VCPUs })),
		gpusOf(total.GPUs, server), costOf(total.HourlyCost, server), halfLife)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tJOBS\tNODES\tVCPUS\tGPUS\t$/HOUR\tWEIGHT\tUSE (h)\tSHARE\tWAITING")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%g\t%.1f\t%.1f%%\t%d\n", r.User,
			heldOf(intOr0(r.Held.RunningJobs), limitOf(r.UserLimit, func(a *contract.UsageAmounts) *int { return a.RunningJobs })),
			heldOf(intOr0(r.Held.Nodes), limitOf(r.UserLimit, func(a *contract.UsageAmounts) *int { return a.Nodes })),
			heldOf(intOr0(r.Held.VCPUs), limitOf(r.UserLimit, func(a *contract.UsageAmounts) *int { return a.VCPUs })),
			gpusOf(r.Held.GPUs, r.UserLimit), costOf(r.Held.HourlyCost, r.UserLimit), r.Weight, r.DecayedUse, 100*r.Share, r.Waiting)
	}
	return tw.Flush()
}

func intOr0(n *int) int {
	if n == nil {
		return 0
	}
	return *n
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

// costOf is "$38.00/$40.00" held against a limit's hourly_cost, or the
// amount held alone.
func costOf(held *float64, limit *contract.UsageAmounts) string {
	h := 0.0
	if held != nil {
		h = *held
	}
	s := fmt.Sprintf("$%.2f", h)
	if limit != nil && limit.HourlyCost != nil {
		s += fmt.Sprintf("/$%.2f", *limit.HourlyCost)
	}
	return s
}
