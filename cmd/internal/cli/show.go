package cli

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
	"sortie/schema"
	"sortie/strategy"
)

// ShowOptions are `jobs show`'s flags.
type ShowOptions struct {
	ID     int64
	Output string
}

// NewCmdShow builds `jobs show`.
func NewCmdShow(f *Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{}
	return oneJobCmd("show ID", "Show a job: its tasks, attempts with exit codes and decisions, launch tries and retry links",
		&opts.ID, &opts.Output, func(ctx context.Context) error {
			if runF != nil {
				return runF(ctx, opts)
			}
			return runShow(ctx, f, opts)
		})
}

// oneJobCmd is a command on one job, `USE [-o table|json]`: it reads the
// job's ID into *id and the output format into *output, then calls run.
func oneJobCmd(use, short string, id *int64, output *string, run func(context.Context) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			if err := outputFlag(*output); err != nil {
				return err
			}
			*id = ids[0]
			return run(cmd.Context())
		},
	}
	cmd.Flags().StringVarP(output, "output", "o", "table", "output format: table or json")
	return cmd
}

func runShow(ctx context.Context, f *Factory, opts *ShowOptions) error {
	return withJobsService(ctx, f, func(svc Service) error {
		d, err := svc.Show(ctx, opts.ID)
		if err != nil {
			return err
		}
		if opts.Output == "json" {
			return printJSON(f.Out, d)
		}
		return printShow(f, d)
	})
}

func printShow(f *Factory, d *contract.JobDetail) error {
	w := f.Out
	now := f.Now()
	fmt.Fprintf(w, "Job %d: %s\n", d.ID, printable(d.Name))
	fmt.Fprintf(w, "Status:        %s\n", d.Status)
	if d.StatusReason != nil {
		fmt.Fprintf(w, "Status reason: %s\n", printable(*d.StatusReason))
	}
	if d.FailureReason != nil {
		fmt.Fprintf(w, "Failure:       %s\n", printable(*d.FailureReason))
	}
	if d.WaitReason != nil {
		fmt.Fprintf(w, "Waiting:       %s\n", printable(contract.Waiting(d.JobView)))
	}
	if d.PreemptedFor != nil {
		fmt.Fprintf(w, "Preempted:     for job %d, of higher priority; stopping, then waiting again\n", *d.PreemptedFor)
	}
	if d.Priority != schema.DefaultPriority {
		fmt.Fprintf(w, "Priority:      %d\n", d.Priority)
	}
	fmt.Fprintf(w, "Submitted:     %s (%s)\n", d.SubmittedAt.Local().Format("2006-01-02 15:04:05"), ago(now, d.SubmittedAt))
	fmt.Fprintf(w, "Duration:      %s\n", duration(d.StartedAt, d.EndedAt, now))
	fmt.Fprintf(w, "Recoveries:    %d   Failures: %s   Exit codes: %s\n", d.RecoveryCount, failures(d), strategy.FormatExitCodes(d.ExitCodes))
	if spent(d.Cost) || spent(d.ChainCost) {
		line := costText(d.Cost, d.CostEstimate)
		if len(d.Chain) > 1 {
			line += fmt.Sprintf("   Retry chain: %s", costText(d.ChainCost, d.ChainCostEstimate))
		}
		fmt.Fprintf(w, "Cost:          %s\n", line)
	}
	if d.InputKey != nil {
		fmt.Fprintf(w, "Input key:     %s\n", *d.InputKey)
	}
	if d.Flaky != nil {
		fmt.Fprintf(w, "Flaky:         flaky %s with these inputs (job_recovery.confirm_failures)\n", flakyRuns(d.Flaky.Flaky, d.Flaky.Runs))
	}
	if d.Size != nil {
		fmt.Fprintf(w, "Escalated to:  %s\n", sizeText(d.Size))
	}
	if len(d.Tasks) == 1 && len(d.Tasks[0].Ports) > 0 {
		fmt.Fprintf(w, "Ports:         %s\n", strings.Join(d.Tasks[0].Ports, ", "))
	}
	printKept(f, d)
	printChain(f, d)
	var pipeline []contract.TaskView
	if len(d.Tasks) > 1 {
		pipeline = d.Tasks
	}
	section(w, "Tasks", pipeline, []string{"  TASK", "NAME", "STATUS", "#RECOVERIES", "FAILURES", "BUDGET", "PORTS"}, func(task contract.TaskView) []string {
		ports := "-"
		if len(task.Ports) > 0 {
			ports = strings.Join(task.Ports, ",")
		}
		status := string(task.Status)
		if l := task.LinkedFrom; l != nil {
			status += fmt.Sprintf(" (linked: job %d task %d)", l.Job, l.Task)
		}
		return []string{"  " + strconv.Itoa(task.Task), task.Name, status, strconv.Itoa(task.RecoveryCount),
			strconv.Itoa(task.RestartsOnErrors), strconv.Itoa(task.MaxRestartsOnErrors), ports}
	})
	if len(d.Attempts) == 0 {
		fmt.Fprintln(w, "\nAttempts:\n  none yet")
	}
	headers := []string{"  TASK", "ATTEMPT", "WHERE", "STARTED", "DURATION", "OUTCOME", "EXIT CODES", "DECISION"}
	// PROGRESS, what the task wrote to $SORTIE_PROGRESS, is shown when
	// some attempt reported any.
	progress := slices.ContainsFunc(d.Attempts, func(a contract.AttemptView) bool { return a.Progress != nil })
	if progress {
		headers = slices.Insert(headers, 7, "PROGRESS")
	}
	// COST is shown when some attempt has cost something.
	costs := slices.ContainsFunc(d.Attempts, func(a contract.AttemptView) bool { return spent(a.Cost) })
	if costs {
		headers = slices.Insert(headers, 5, "COST")
	}
	// CHECKPOINT, the newest object of the task's MOUNT_CACHED buckets
	// when the attempt ended, likewise.
	checkpoint := slices.ContainsFunc(d.Attempts, func(a contract.AttemptView) bool { return a.Checkpoint != nil })
	if checkpoint {
		headers = slices.Insert(headers, len(headers)-1, "CHECKPOINT")
	}
	section(w, "Attempts", d.Attempts, headers, func(a contract.AttemptView) []string {
		where := "-"
		if a.Cloud != nil {
			where = strings.Join(nonEmpty(*a.Cloud, deref(a.Region), deref(a.Zone)), "/")
		}
		if a.Size != nil {
			where += " (" + sizeText(a.Size) + ")"
		}
		outcome := string(a.State)
		if a.Outcome != nil {
			outcome = *a.Outcome
		}
		decision := orDash(a.Decision)
		if a.Reason != nil && *a.Reason != "" {
			decision = *a.Reason + " → " + decision
		}
		start := a.StartedAt
		row := []string{"  " + strconv.Itoa(a.Task), attemptText(a), where, ago(now, a.StartedAt),
			duration(&start, a.EndedAt, now), outcome, strategy.FormatExitCodes(a.ExitCodes), decision}
		if progress {
			p := "-"
			if a.Progress != nil {
				p = strconv.FormatInt(*a.Progress, 10)
			}
			row = slices.Insert(row, 7, p)
		}
		if costs {
			row = slices.Insert(row, 5, costText(a.Cost, a.CostEstimate))
		}
		if checkpoint {
			c := "-"
			if a.Checkpoint != nil {
				c = path.Base(a.Checkpoint.Key) + " " + a.Checkpoint.Modified.UTC().Format("15:04:05")
			}
			row = slices.Insert(row, len(row)-1, c)
		}
		return row
	})
	printNotices(w, d.Attempts)
	section(w, "Failed launch tries", d.LaunchTries, []string{"  TASK", "ATTEMPT", "ROUND", "WHERE", "CLASS", "ERROR"}, func(lt contract.LaunchTryView) []string {
		return []string{"  " + strconv.Itoa(lt.Task), strconv.Itoa(lt.Attempt), strconv.Itoa(lt.Round + 1),
			strings.Join(nonEmpty(lt.Cloud, lt.Region, lt.Zone), "/"), lt.Class, lt.Message}
	})
	printNotifications(f, d)
	printStorage(f, d)
	return nil
}

// printStorage lists what each node's bucket syncs did: the download
// before setup, and the last upload (when it finished, what it moved).
func printStorage(f *Factory, d *contract.JobDetail) {
	now := f.Now()
	headers := []string{"  TASK", "ATTEMPT", "NODE", "PATH", "BUCKET", "MODE", "DOWNLOADED", "LAST UPLOAD", "UPLOADED", "ERROR"}
	section(f.Out, "Buckets", d.Storage, headers, func(m contract.StorageView) []string {
		down, up := "-", "-"
		if m.DownloadedAt != nil {
			down = bytesText(m.DownloadedBytes)
		}
		if m.UploadedAt != nil {
			up = fmt.Sprintf("%s, %s", ago(now, *m.UploadedAt), bytesText(m.UploadedBytes))
		}
		return []string{"  " + strconv.Itoa(m.Task), strconv.Itoa(m.Attempt), strconv.Itoa(m.Node), printable(m.Path), m.Bucket, m.Mode,
			down, up, bytesText(m.UploadedTotal), printable(orDash(m.Error))}
	})
}

// section writes a titled table with a row for each item, nothing when
// there is none.
func section[T any](w io.Writer, title string, items []T, headers []string, row func(T) []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	t := newTable(w, headers...)
	for _, it := range items {
		t.row(row(it)...)
	}
	t.flush()
}

// bytesText is a byte count as people read it: 512 B, 3.2 MiB.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// printKept says whether the job's cluster is kept after its failure
// (keep_on_failure), until when and how to reach it, or when and why it
// was released.
func printKept(f *Factory, d *contract.JobDetail) {
	now := f.Now()
	for _, a := range d.Attempts {
		if a.KeptUntil == nil {
			continue
		}
		keptTill := a.KeptUntil.Local().Format("2006-01-02 15:04:05")
		switch {
		case a.ReleasedAt != nil:
			fmt.Fprintf(f.Out, "Cluster:       %s was kept until %s; released %s: %s\n", a.Cluster, keptTill,
				ago(now, *a.ReleasedAt), printable(deref(a.ReleasedReason)))
		case !now.Before(*a.KeptUntil):
			fmt.Fprintf(f.Out, "Cluster:       %s kept until %s; being torn down\n", a.Cluster, keptTill)
		default:
			fmt.Fprintf(f.Out, "Cluster:       %s kept until %s (%s left): `sortie jobs ssh %d`, `sortie jobs release %d`\n",
				a.Cluster, keptTill, contract.Age(a.KeptUntil.Sub(now)), d.ID, d.ID)
		}
	}
}

// printNotifications lists each event posted to a webhook: delivered,
// waiting for its next try (and why), or given up (and why).
func printNotifications(f *Factory, d *contract.JobDetail) {
	now := f.Now()
	section(f.Out, "Notifications", d.Notifications, []string{"  EVENT", "STATUS", "WEBHOOK", "STATE", "TRIES", "DETAIL"}, func(n contract.NotificationView) []string {
		detail := orDash(n.Error)
		switch {
		case n.State == "pending" && n.NextTryAt != nil && n.Tries > 0:
			detail = fmt.Sprintf("%s; next try %s", detail, until(now, *n.NextTryAt))
		case n.State == "delivered" && n.HTTPStatus != nil:
			detail = fmt.Sprintf("HTTP %d", *n.HTTPStatus)
		}
		return []string{"  " + n.Event, string(n.Status), n.URL, n.State, strconv.Itoa(n.Tries), detail}
	})
}

// until says when a time to come is: "in 4s", or "now" once it is past.
func until(now, t time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return "in " + t.Sub(now).Round(time.Second).String()
}

// printChain shows the retry chain from the first job to the newest.
func printChain(f *Factory, d *contract.JobDetail) {
	if len(d.Chain) <= 1 {
		return
	}
	fmt.Fprintln(f.Out, "\nRetry chain:")
	for _, j := range d.Chain {
		mark := "  "
		if j.ID == d.ID {
			mark = "▶ "
		}
		line := fmt.Sprintf("%s%d  %s", mark, j.ID, j.Status)
		if j.RetryOf != nil {
			line += fmt.Sprintf("  retry of %d", *j.RetryOf)
			if j.RequestedBy != nil {
				line += " by " + *j.RequestedBy
			}
			if j.RetryReason != nil {
				line += fmt.Sprintf(": %q", *j.RetryReason)
			}
			for _, o := range j.Overrides {
				line += "  [" + o.String() + "]"
			}
		} else {
			line += "  original"
		}
		fmt.Fprintln(f.Out, printable(line))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// failures says how many failures counted against max_restarts_on_errors,
// and for a single task how many restarts on error it has left: "2,
// restarts on error left 0 of 1" is a task that restarted once on errors
// and then failed for good. A pipeline's are per task, in the tasks table.
func failures(d *contract.JobDetail) string {
	if len(d.Tasks) == 1 {
		return fmt.Sprintf("%d, %s", d.RestartsOnErrors, contract.RestartsLeft(d.Tasks[0].RestartsOnErrors, d.Tasks[0].MaxRestartsOnErrors))
	}
	return strconv.Itoa(d.RestartsOnErrors)
}

// printNotices lists the preemption notices the attempts' nodes heard:
// when, the deadline, when the replacement was asked for, and its head
// start (how long before the old attempt ended it was asked for).
func printNotices(w io.Writer, as []contract.AttemptView) {
	var with []contract.AttemptView
	for _, a := range as {
		if a.Notice != nil {
			with = append(with, a)
		}
	}
	stamp := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	headers := []string{"  TASK", "ATTEMPT", "KIND", "FROM", "HEARD", "DEADLINE", "REPLACEMENT ASKED", "HEAD START"}
	section(w, "Preemption notices", with, headers, func(a contract.AttemptView) []string {
		n := a.Notice
		head := "-"
		switch {
		case a.HeadStartMS != nil:
			head = (time.Duration(*a.HeadStartMS) * time.Millisecond).Round(100 * time.Millisecond).String()
		case a.ReplacedAt != nil:
			head = "not ended yet"
		}
		return []string{"  " + strconv.Itoa(a.Task), strconv.Itoa(a.Attempt), n.Kind, n.Source, stamp(&n.At), stamp(n.Deadline), stamp(a.ReplacedAt), head}
	})
}

// sizeText names an escalated size: "cpus 8, memory 32 GB, accelerators
// A100:1", the dimensions it grows.
func sizeText(s *contract.SizeView) string {
	var parts []string
	if s.CPUs != nil {
		parts = append(parts, "cpus "+strings.TrimSuffix(*s.CPUs, "+"))
	}
	if s.Memory != nil {
		parts = append(parts, "memory "+strings.TrimSuffix(*s.Memory, "+")+" GB")
	}
	if s.Accelerators != nil {
		parts = append(parts, "accelerators "+*s.Accelerators)
	}
	return printable(strings.Join(parts, ", "))
}
