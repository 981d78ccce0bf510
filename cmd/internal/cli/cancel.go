package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// CancelOptions are `jobs cancel`'s flags.
type CancelOptions struct {
	IDs []int64
	FilterOptions
	All    bool
	DryRun bool
	Yes    bool
	Output string
}

// NewCmdCancel builds `jobs cancel`.
func NewCmdCancel(f *Factory, runF func(context.Context, *CancelOptions) error) *cobra.Command {
	opts := &CancelOptions{}
	cmd := &cobra.Command{
		Use:   "cancel ID... | -n GLOB [--status S] [--since T] | --all",
		Short: "Cancel jobs: their running attempts are stopped and their clusters torn down",
		Long: "Cancel unfinished jobs by id, by filter (--name, --status, --since, as `jobs retry` takes them), or all of them.\n" +
			"More than one job asks for confirmation unless -y; --dry-run lists what would be cancelled.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			opts.IDs = ids
			if err := outputFlag(opts.Output); err != nil {
				return err
			}
			given := 0
			for _, b := range []bool{len(ids) > 0, opts.FilterOptions.given(), opts.All} {
				if b {
					given++
				}
			}
			if given != 1 {
				return usageErrorf("name the jobs to cancel in one way: IDs, a filter (-n GLOB, --status, --since) or --all")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCancel(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	opts.FilterOptions.add(fl, "cancel", "unfinished")
	fl.BoolVar(&opts.All, "all", false, "cancel every unfinished job")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "list what would be cancelled and cancel nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before cancelling more than one job")
	fl.StringVarP(&opts.Output, "output", "o", "table", "output format of --dry-run: table or json")
	return cmd
}

func runCancel(ctx context.Context, f *Factory, opts *CancelOptions) error {
	filter, err := opts.filter(f)
	if err != nil {
		return err
	}
	req := contract.CancelRequest{IDs: opts.IDs, Filter: filter, All: opts.All}
	return withService(ctx, f, func(svc Service) error {
		targets, err := svc.CancelTargets(ctx, req)
		if err != nil {
			return err
		}
		if len(targets) == 0 {
			if len(opts.IDs) > 0 {
				fmt.Fprintln(f.Err, "No unfinished job to cancel.")
				return &exitError{code: ExitFailed}
			}
			others, err := othersUnfinished(ctx, svc, filter)
			if err != nil {
				return err
			}
			if others == "" {
				fmt.Fprintln(f.Err, "No unfinished job to cancel.")
			} else {
				fmt.Fprintf(f.Err, "No unfinished job to cancel: none of yours (%s).\n", others)
			}
			return nil
		}
		if opts.DryRun {
			if opts.Output == "json" {
				return printJSONList(f.Out, targets)
			}
			fmt.Fprintf(f.Err, "Would cancel %d job(s):\n", len(targets))
			t := newTable(f.Out, "ID", "NAME", "STATUS", "SUBMITTED")
			for _, j := range targets {
				t.row(fmt.Sprint(j.ID), j.Name, string(j.Status), j.SubmittedAt.UTC().Format("2006-01-02 15:04:05"))
			}
			return t.flush()
		}
		if len(targets) > 1 && !opts.Yes {
			terminal := stdinIsTerminal
			if f.IsTerminal != nil {
				terminal = f.IsTerminal
			}
			if !terminal() {
				return usageErrorf("%d jobs match (%s); pass -y to cancel them without a question (standard input is not a terminal to ask on), or --dry-run to list them", len(targets), idList(targets))
			}
			if !confirm(f, fmt.Sprintf("Cancel %d jobs (%s)? [y/N] ", len(targets), idList(targets))) {
				fmt.Fprintln(f.Err, "Nothing cancelled.")
				return &exitError{code: ExitFailed}
			}
		}
		// Exactly the jobs listed and confirmed, not what the filter
		// matches by now.
		ids := make([]int64, len(targets))
		for i, j := range targets {
			ids[i] = j.ID
		}
		marked, err := svc.Cancel(ctx, contract.CancelRequest{IDs: ids})
		for _, id := range marked {
			fmt.Fprintf(f.Out, "Cancelling job %d.\n", id)
		}
		if err != nil {
			return err
		}
		if len(marked) == 0 {
			fmt.Fprintln(f.Err, "No unfinished job to cancel: they ended meanwhile.")
		}
		return nil
	})
}

// othersUnfinished counts, per owner, the unfinished jobs a filter (or
// --all) would match that it did not select because they are not the
// caller's: "alice has 1, carol has 2"; "" when there are none.
func othersUnfinished(ctx context.Context, svc Service, filter contract.Filter) (string, error) {
	statuses := filter.Statuses
	if len(statuses) == 0 {
		statuses = lifecycle.ActiveStatuses()
	}
	jobs, err := svc.Queue(ctx, contract.QueueRequest{All: true, Statuses: statuses, NameGlob: filter.NameGlob})
	if err != nil {
		return "", err
	}
	counts, ownerless := map[string]int{}, 0
	for _, j := range jobs {
		switch {
		case j.Status.Terminal() || (filter.Since != nil && j.SubmittedAt.Before(*filter.Since)):
		case j.Owner == nil:
			ownerless++
		default:
			counts[*j.Owner]++
		}
	}
	var parts []string
	for _, owner := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s has %d", owner, counts[owner]))
	}
	if ownerless > 0 {
		parts = append(parts, fmt.Sprintf("%d from before owners", ownerless))
	}
	return strings.Join(parts, ", "), nil
}
