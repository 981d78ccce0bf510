package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/service"
	"sortie/provision"
	"sortie/provision/local"
	"sortie/provision/node"
	"sortie/provision/node/notice"
	"sortie/provision/node/notice/imdsmock"
	"sortie/schema"
)

// NoticeOptions is a run of preemption notices: Jobs local jobs each given
// `local preempt --notice`, and Agents node agents hearing one spot
// interruption from AWS's metadata simulator, Rounds times.
type NoticeOptions struct {
	Bin      string // sortie, with sortie-controller and sortie-agent beside it
	Home     string
	Jobs     int
	Agents   int
	Rounds   int
	Timeout  time.Duration
	Progress io.Writer
}

// NoticeResult is one sample per notice.
type NoticeResult struct {
	// LocalSigterm: from the notice given on local (the notice's time the
	// CLI records) to the task's SIGTERM trap running.
	LocalSigterm []time.Duration
	// Replacement: from that notice to the replacement attempt's launch.
	Replacement []time.Duration
	// IMDSSigterm: from the time the metadata simulator begins to serve
	// the spot interruption to the task's SIGTERM trap running.
	IMDSSigterm []time.Duration
	// Statuses is how the local jobs ended.
	Statuses map[string]int
}

// trapTask is a task whose first attempt writes the time (ns since the
// epoch) its SIGTERM trap runs into dir/term-ID, after touching
// dir/ready-ID once the trap is set; its next attempts succeed at once.
func trapTask(dir, id string) string {
	return `if [ "${SORTIE_ATTEMPT:-1}" != 1 ]; then exit 0; fi
trap 'date +%s%N > ` + dir + `/term-` + id + `; exit 143' TERM
echo ready > ` + dir + `/ready-` + id + `
sleep 1000 &
wait
`
}

// RunNotice runs both parts.
func RunNotice(ctx context.Context, o NoticeOptions) (*NoticeResult, error) {
	r := &NoticeResult{}
	if err := runLocalNotices(ctx, o, r); err != nil {
		return r, err
	}
	return r, runIMDSNotices(ctx, o, r)
}

func runLocalNotices(ctx context.Context, o NoticeOptions, r *NoticeResult) error {
	dir := filepath.Join(o.Home, "local")
	marks := filepath.Join(dir, "marks")
	if err := os.MkdirAll(marks, 0o755); err != nil {
		return err
	}
	task := "run: |\n" + indent(trapTask(marks, "$SORTIE_JOB_ID"))
	h, err := openHome(ctx, o.Bin, dir, "", task)
	if err != nil {
		return err
	}
	defer h.Close()
	fmt.Fprintf(o.Progress, "notice: %d local jobs\n", o.Jobs)
	ids, _, err := submit(ctx, h.daemon, h.task, o.Jobs, o.Jobs, io.Discard)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := waitPath(ctx, filepath.Join(marks, fmt.Sprintf("ready-%d", id)), o.Timeout); err != nil {
			return fmt.Errorf("job %d never ran: %w", id, err)
		}
	}
	svc, err := service.Open(ctx, dir, clouds.Light())
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.StartDaemon = func(context.Context, string) error { h.daemon.Nudge(); return nil }
	svc.FindDaemon = nil
	for _, id := range ids {
		if err := waitRunning(ctx, svc, id, o.Timeout); err != nil {
			return err
		}
		if _, _, err := svc.Notice(ctx, id, 0, 30*time.Second); err != nil {
			return fmt.Errorf("notice to job %d: %w", id, err)
		}
	}
	if r.Statuses, err = waitAll(ctx, h.db, o.Jobs, 50*time.Millisecond, o.Timeout, 10*time.Second, o.Progress); err != nil {
		return err
	}
	for _, id := range ids {
		d, err := svc.Show(ctx, id)
		if err != nil {
			return err
		}
		if len(d.Attempts) < 2 || d.Attempts[0].Notice == nil {
			return fmt.Errorf("job %d: %d attempts, notice %v; want a replacement after the notice", id, len(d.Attempts), d.Attempts[0].Notice)
		}
		at := d.Attempts[0].Notice.At
		term, err := readNanos(filepath.Join(marks, fmt.Sprintf("term-%d", id)))
		if err != nil {
			return fmt.Errorf("job %d: %w", id, err)
		}
		r.LocalSigterm = append(r.LocalSigterm, term.Sub(at))
		r.Replacement = append(r.Replacement, d.Attempts[1].StartedAt.Sub(at))
	}
	return nil
}

// runIMDSNotices starts Agents node agents on one local cluster, told to
// hear notices from AWS's metadata simulator, then starts the simulator
// with a spot interruption due a few seconds later, on a whole second (its
// resolution).
func runIMDSNotices(ctx context.Context, o NoticeOptions, r *NoticeResult) error {
	dir := filepath.Join(o.Home, "imds")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(o.Progress, "notice: building amazon-ec2-metadata-mock\n")
	mockBin, err := imdsmock.Build(ctx, dir)
	if err != nil {
		return err
	}
	// The agents are found as the controller finds them: node.Start reads
	// the variable in this process, which gets its old value back after.
	old, had := os.LookupEnv(node.AgentEnv)
	os.Setenv(node.AgentEnv, filepath.Join(filepath.Dir(o.Bin), "sortie-agent"))
	defer func() {
		if had {
			os.Setenv(node.AgentEnv, old)
		} else {
			os.Unsetenv(node.AgentEnv)
		}
	}()
	// Unsandboxed: the tasks mark their trap in a folder of this home,
	// which a sandbox hides.
	prov := local.New(local.Config{Home: dir, Sandbox: local.SandboxOff})
	for round := range o.Rounds {
		fmt.Fprintf(o.Progress, "notice: round %d, %d agents on the metadata simulator\n", round+1, o.Agents)
		if err := imdsRound(ctx, o, prov, dir, mockBin, round, r); err != nil {
			return err
		}
	}
	return nil
}

func imdsRound(ctx context.Context, o NoticeOptions, prov *local.Provider, dir, mockBin string, round int, r *NoticeResult) error {
	marks := filepath.Join(dir, fmt.Sprintf("marks-%d", round))
	if err := os.MkdirAll(marks, 0o755); err != nil {
		return err
	}
	port, err := imdsmock.FreePort()
	if err != nil {
		return err
	}
	endpoint := "http://127.0.0.1:" + port
	cl, err := prov.Launch(ctx, provision.ClusterSpec{Name: fmt.Sprintf("sortie-%d-0-1", round+1), NumNodes: o.Agents,
		Placement: schema.Placement{Cloud: local.CloudName, Region: "local", Zone: "local-a"}})
	if err != nil {
		return err
	}
	defer prov.Terminate(context.WithoutCancel(ctx), cl.Name)
	for rank := range cl.Nodes {
		rn, err := prov.Runner(ctx, cl, rank)
		if err != nil {
			return err
		}
		err = node.Start(ctx, node.ForAttempt(rn, 1), node.StartSpec{Run: trapTask(marks, strconv.Itoa(rank)),
			NoticeSource: notice.SourceAWS, NoticeEndpoint: endpoint})
		rn.Close()
		if err != nil {
			return fmt.Errorf("start agent %d: %w", rank, err)
		}
	}
	for rank := range cl.Nodes {
		if err := waitPath(ctx, filepath.Join(marks, fmt.Sprintf("ready-%d", rank)), o.Timeout); err != nil {
			return fmt.Errorf("agent %d: the task never ran: %w", rank, err)
		}
	}
	due := time.Now().Truncate(time.Second).Add(3 * time.Second)
	m, err := imdsmock.StartOn(ctx, mockBin, dir, port, "spot", "--mock-trigger-time", due.UTC().Format(time.RFC3339))
	if err != nil {
		return err
	}
	defer m.Stop()
	for rank := range cl.Nodes {
		path := filepath.Join(marks, fmt.Sprintf("term-%d", rank))
		if err := waitPath(ctx, path, o.Timeout); err != nil {
			return fmt.Errorf("agent %d: no SIGTERM: %w", rank, err)
		}
		term, err := readNanos(path)
		if err != nil {
			return err
		}
		r.IMDSSigterm = append(r.IMDSSigterm, term.Sub(due))
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

// waitPath waits until path exists and is not empty.
func waitPath(ctx context.Context, path string, timeout time.Duration) error {
	return until(ctx, 20*time.Millisecond, timeout, func() (bool, error) {
		fi, err := os.Stat(path)
		return err == nil && fi.Size() > 0, nil
	}, func() error { return fmt.Errorf("%s not there within %s", path, timeout) })
}

// waitRunning waits until job id's attempt runs.
func waitRunning(ctx context.Context, svc *service.Service, id int64, timeout time.Duration) error {
	return until(ctx, 20*time.Millisecond, timeout, func() (bool, error) {
		d, err := svc.Show(ctx, id)
		if err != nil {
			return false, err
		}
		n := len(d.Attempts)
		return n > 0 && d.Attempts[n-1].State == "running", nil
	}, func() error { return fmt.Errorf("job %d not running within %s", id, timeout) })
}

// readNanos reads a time the task wrote with date +%s%N.
func readNanos(path string) (time.Time, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %q is not a time in ns", path, b)
	}
	return time.Unix(0, n), nil
}
