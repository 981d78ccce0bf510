package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// QueueOptions are `jobs queue`'s flags.
type QueueOptions struct {
	All      bool
	Output   string
	Statuses []string
	Name     string
	Limit    int
}

// NewCmdQueue builds `jobs queue`.
func NewCmdQueue(f *Factory) *cobra.Command {
	opts := &QueueOptions{}
	cmd := &cobra.Command{
		Use:   "queue",
		Short: "List jobs: every unfinished job and the newest finished ones (-a: all)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(opts.Output); err != nil {
				return err
			}
			return runQueue(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.All, "all", "a", false, "show every job")
	fl.StringVarP(&opts.Output, "output", "o", "table", "output format: table or json")
	fl.StringSliceVar(&opts.Statuses, "status", nil, "only jobs with these statuses (comma-separated)")
	fl.StringVar(&opts.Name, "name", "", "only jobs whose name matches this pattern (e.g. 'lab-*')")
	fl.IntVar(&opts.Limit, "limit", 50, "how many finished jobs the default view shows")
	return cmd
}

// statuses reads --status values, in any case; the service says which
// are not statuses.
func statuses(ss []string) []lifecycle.Status {
	out := make([]lifecycle.Status, len(ss))
	for i, s := range ss {
		out[i] = lifecycle.Status(strings.ToUpper(strings.TrimSpace(s)))
	}
	return out
}

func runQueue(ctx context.Context, f *Factory, opts *QueueOptions) error {
	req := contract.QueueRequest{All: opts.All, Statuses: statuses(opts.Statuses), NameGlob: opts.Name, Finished: opts.Limit}
	return withJobsService(ctx, f, func(svc Service) error {
		if opts.Output == "json" {
			// Streamed: a listing of many jobs is never held whole.
			l := newJSONList(f.Out)
			if err := svc.QueueEach(ctx, req, func(v contract.JobView) error { return l.add(&v) }); err != nil {
				return err
			}
			return l.close()
		}
		jobs, err := svc.Queue(ctx, req)
		if err != nil {
			return err
		}
		return printQueue(f, jobs)
	})
}

// printQueue writes the queue as a table. OWNER is there when the jobs
// shown have more than one owner, TASK when one of them is a pipeline,
// COST when one has cost something (a run on prices left at zero, the
// local default, shows none), RETRY OF when one is a retry, and PRIORITY
// and WAITING (place and reason) when one waits under the limits, so
// that a queue keeps to 120 columns.
func printQueue(f *Factory, jobs []contract.JobView) error {
	if len(jobs) == 0 {
		fmt.Fprintln(f.Err, "No jobs.")
		return nil
	}
	owners := map[string]bool{}
	pipelines, retries, costs, waiting := false, false, false, false
	for _, j := range jobs {
		waiting = waiting || j.WaitReason != nil
		owners[orDash(j.Owner)] = true
		pipelines = pipelines || j.NumTasks > 1
		retries = retries || j.RetryOf != nil
		costs = costs || spent(j.Cost)
	}
	showOwner := len(owners) > 1
	headers := []string{"ID", "NAME"}
	if showOwner {
		headers = append(headers, "OWNER")
	}
	if pipelines {
		headers = append(headers, "TASK")
	}
	headers = append(headers, "RESOURCES", "LOCATION", "SUBMITTED", "DURATION")
	if costs {
		headers = append(headers, "COST")
	}
	headers = append(headers, "#RECOV", "STATUS", "EXIT")
	if retries {
		headers = append(headers, "RETRY OF")
	}
	if waiting {
		headers = append(headers, "PRIORITY", "WAITING")
	}
	now := f.Now()
	t := newTable(f.Out, headers...)
	for _, j := range jobs {
		row := []string{strconv.FormatInt(j.ID, 10), j.Name}
		if showOwner {
			row = append(row, orDash(j.Owner))
		}
		if pipelines {
			task := "-"
			if j.NumTasks > 1 {
				task = fmt.Sprintf("%d/%d", j.CurrentTask+1, j.NumTasks)
			}
			row = append(row, task)
		}
		row = append(row, orDash(j.Resources), orDash(j.Location), shortAgo(now, j.SubmittedAt), duration(j.StartedAt, j.EndedAt, now))
		if costs {
			row = append(row, costText(j.Cost, j.CostEstimate))
		}
		row = append(row, strconv.Itoa(j.RecoveryCount), string(j.Status), strategy.FormatExitCodes(j.ExitCodes))
		if retries {
			row = append(row, idOrDash(j.RetryOf))
		}
		if waiting {
			row = append(row, waitPriority(j), contract.Waiting(j))
		}
		t.row(row...)
	}
	return t.flush()
}

// waitPriority is a waiting job's priority, which orders it among the
// waiting (`jobs priority` changes it); "-" for any other job.
func waitPriority(j contract.JobView) string {
	if j.WaitReason == nil {
		return "-"
	}
	return strconv.Itoa(j.Priority)
}

// shortAgo is how long before now t was, in its largest unit: "45s ago",
// "12m ago", "5h ago", "3d ago" (hours up to two days).
func shortAgo(now, t time.Time) string {
	d := max(now.Sub(t), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// costText shows dollars as `jobs queue` and `jobs show` do (contract.Cost).
func costText(dollars *float64, estimate bool) string { return contract.Cost(dollars, estimate) }

// spent says a cost is known and above zero: what makes a COST column or
// line worth its room.
func spent(dollars *float64) bool { return dollars != nil && *dollars > 0 }
