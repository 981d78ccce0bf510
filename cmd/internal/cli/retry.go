package cli

import (
	"bufio"
	"context"
	"fmt"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
	"sortie/strategy"
)

// RetryOptions are `jobs retry`'s flags.
type RetryOptions struct {
	IDs    []int64
	Reason string
	Sets   []string
	FilterOptions
	DryRun bool
	Yes    bool
	Output string
	// FromFailedTask starts each retry at the task that failed, linking
	// the pipeline's tasks that succeeded before it.
	FromFailedTask bool
}

// NewCmdRetry builds `jobs retry`.
func NewCmdRetry(f *Factory, runF func(context.Context, *RetryOptions) error) *cobra.Command {
	opts := &RetryOptions{}
	cmd := &cobra.Command{
		Use:   "retry ID... --reason TEXT [--set PATH=VALUE]... [--from-failed-task] | --status S --name GLOB --reason TEXT",
		Short: "Retry ended jobs as new jobs linked to the originals",
		Long: "Retry ended jobs (SUCCEEDED included). Each retry is a new job that records what it retries,\n" +
			"who asked, why, and the overrides given with --set; the original keeps its history.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			opts.IDs = ids
			if err := outputFlag(opts.Output); err != nil {
				return err
			}
			if len(ids) > 0 && opts.FilterOptions.given() {
				return usageErrorf("give job IDs or a filter (--status/--name/--since), not both")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRetry(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Reason, "reason", "", "why the job is retried (required)")
	fl.StringArrayVar(&opts.Sets, "set", nil, "override a task field for the retry, PATH=VALUE (e.g. resources.memory=32, envs.SEED=7); repeatable")
	opts.FilterOptions.add(fl, "retry", "ended")
	fl.BoolVar(&opts.FromFailedTask, "from-failed-task", false, "for a pipeline: start at the task that failed, linking the tasks that succeeded before it instead of running them again")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "list what would be retried and create nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before retrying more than one job")
	fl.StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runRetry(ctx context.Context, f *Factory, opts *RetryOptions) error {
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	if v := f.Getenv("SORTIE_USER"); v != "" {
		who = v
	}
	filter, err := opts.filter(f)
	if err != nil {
		return err
	}
	req := contract.RetryRequest{IDs: opts.IDs, Filter: filter,
		Reason: opts.Reason, Sets: opts.Sets, RequestedBy: who, FromFailedTask: opts.FromFailedTask, Warn: func(w string) { fmt.Fprintln(f.Err, "warning:", printable(w)) }}
	return withService(ctx, f, func(rs Service) error {
		targets, err := rs.RetryTargets(ctx, req)
		if err != nil {
			return err
		}
		if len(targets) == 0 {
			fmt.Fprintln(f.Err, "No ended job matches; nothing to retry.")
			return &exitError{code: ExitFailed}
		}
		if opts.DryRun {
			if opts.Output == "json" {
				return printJSON(f.Out, targets)
			}
			fmt.Fprintf(f.Err, "Would retry %d job(s):\n", len(targets))
			t := newTable(f.Out, "ID", "NAME", "STATUS", "EXIT CODES")
			for _, j := range targets {
				t.row(fmt.Sprint(j.ID), j.Name, string(j.Status), strategy.FormatExitCodes(j.ExitCodes))
			}
			return t.flush()
		}
		if len(targets) > 1 && !opts.Yes {
			if !confirm(f, fmt.Sprintf("Retry %d jobs (%s)? [y/N] ", len(targets), idList(targets))) {
				fmt.Fprintln(f.Err, "Nothing retried.")
				return &exitError{code: ExitFailed}
			}
		}
		req.IDs = make([]int64, len(targets))
		for i, j := range targets {
			req.IDs[i] = j.ID
		}
		req.Filter = contract.Filter{}
		results, err := rs.Retry(ctx, req)
		if opts.Output == "json" && err == nil {
			return printJSON(f.Out, results)
		}
		for _, r := range results {
			if r.FromTask != nil {
				fmt.Fprintf(f.Out, "Job %d retries job %d (%s) from task %d; tasks before it are linked, not run again.\n",
					r.Retry.ID, r.Original.ID, r.Original.Status, *r.FromTask)
			} else {
				fmt.Fprintf(f.Out, "Job %d retries job %d (%s).\n", r.Retry.ID, r.Original.ID, r.Original.Status)
			}
			for _, o := range r.Override {
				fmt.Fprintf(f.Out, "  %s\n", printable(o.String()))
			}
		}
		return err
	})
}

func idList(jobs []contract.JobView) string {
	parts := make([]string, 0, len(jobs))
	for i, j := range jobs {
		if i == 10 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprint(j.ID))
	}
	return strings.Join(parts, ", ")
}

// confirm asks a yes/no question on the factory's input.
func confirm(f *Factory, question string) bool {
	fmt.Fprint(f.Err, question)
	line, _ := bufio.NewReader(f.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
