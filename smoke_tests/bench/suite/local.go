package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LocalOptions is a run of many trivial jobs on the local provider,
// compared with running the same commands from a plain loop.
type LocalOptions struct {
	Bin      string
	Home     string
	Jobs     int
	Parallel int // launches at a time (controller.max_parallel_launches), and the loop's width
	Timeout  time.Duration
	Progress io.Writer
}

// LocalResult is the two wall times and how the jobs ended, and the node
// agent's resident memory while a task ran.
type LocalResult struct {
	Sortie, Plain time.Duration
	Statuses      map[string]int
	AgentRSSKiB   int64
	// TaskRSSKiB is the resident memory of the bash running that task's
	// run phase, read at the same moment: the agent's baseline.
	TaskRSSKiB int64
	// CPU is the user and system CPU of the controller and of every
	// process it and the node agents started (the scripts, the agents,
	// the tasks' bash), from the controller's start until it stopped, for
	// CPUJobs jobs (the timed ones and the one agentRSS runs).
	CPU     time.Duration
	CPUJobs int
}

// CPUPerJob is CPU over CPUJobs.
func (r LocalResult) CPUPerJob() time.Duration {
	if r.CPUJobs == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.CPUJobs)
}

// Ratio is sortie's wall time over the plain loop's.
func (r LocalResult) Ratio() float64 { return float64(r.Sortie) / float64(r.Plain) }

const localTask = `name: noop
run: "true"
`

// RunLocal times Jobs runs of `bash -c true`, Parallel at a time, then
// the same number of jobs running "true" submitted at once to a controller
// that launches Parallel at a time, from the first submit until the last
// job ended.
func RunLocal(ctx context.Context, o LocalOptions) (*LocalResult, error) {
	r := &LocalResult{}
	var err error
	fmt.Fprintf(o.Progress, "local: %d runs of bash -c true, %d at a time\n", o.Jobs, o.Parallel)
	if r.Plain, err = plainLoop(ctx, o.Jobs, o.Parallel); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf("controller:\n  max_parallel_launches: %d\n", o.Parallel)
	// What the controller's processes used is read from this process's
	// children's rusage: the controller is its child, and what the
	// controller detaches (the node agents) is adopted and reaped here.
	cpu0, err := childrenCPU()
	if err != nil {
		return nil, err
	}
	h, err := openHome(ctx, o.Bin, o.Home, cfg, localTask)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	d, db, file := h.daemon, h.db, h.task
	adopted, err := adoptOrphans()
	if err != nil {
		return nil, fmt.Errorf("adopt what the controller detaches: %w", err)
	}
	defer adopted.finish(0)
	fmt.Fprintf(o.Progress, "local: %d jobs on sortie\n", o.Jobs)
	t0 := time.Now()
	if _, _, err := submit(ctx, d, file, o.Jobs, 100, io.Discard); err != nil {
		return nil, err
	}
	if r.Statuses, err = waitAll(ctx, db, o.Jobs, 50*time.Millisecond, o.Timeout, 10*time.Second, o.Progress); err != nil {
		return r, err
	}
	last, n, err := latest(ctx, db, "ended_at")
	if err != nil {
		return r, err
	}
	if n != o.Jobs {
		return r, fmt.Errorf("%d of %d jobs have an end time", n, o.Jobs)
	}
	r.Sortie = last.Sub(t0)
	if r.AgentRSSKiB, r.TaskRSSKiB, err = agentRSS(ctx, h, o); err != nil {
		return r, err
	}
	if err := d.Stop(time.Minute); err != nil {
		return r, err
	}
	if err := adopted.finish(30 * time.Second); err != nil {
		return r, err
	}
	cpu1, err := childrenCPU()
	if err != nil {
		return r, err
	}
	r.CPU, r.CPUJobs = cpu1-cpu0, o.Jobs+1
	return r, nil
}

// agentRSSTask runs long enough for its agent to be measured; the file it
// waits for ends it.
const agentRSSTask = `name: rss
run: |
  while [ ! -f "$SORTIE_BENCH_GATE" ]; do sleep 0.05; done
`

// agentRSS runs one more job and reads the VmRSS of its node agent and of
// the bash running its task, then lets the job end.
func agentRSS(ctx context.Context, h *home, o LocalOptions) (agent, task int64, err error) {
	gate := filepath.Join(o.Home, "work", "rss-gate")
	file := filepath.Join(o.Home, "work", "rss.yaml")
	gated := strings.Replace(agentRSSTask, "$SORTIE_BENCH_GATE", gate, 1)
	if err := os.WriteFile(file, []byte(gated), 0o644); err != nil {
		return 0, 0, err
	}
	defer os.WriteFile(gate, nil, 0o644)
	if _, _, err := submit(ctx, h.daemon, file, 1, 1, io.Discard); err != nil {
		return 0, 0, err
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if agent, task, ok := agentVmRSS(o.Home); ok {
			os.WriteFile(gate, nil, 0o644)
			_, err := waitAll(ctx, h.db, o.Jobs+1, 50*time.Millisecond, time.Minute, 10*time.Second, io.Discard)
			return agent, task, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, 0, fmt.Errorf("no node agent with a running task under %s within a minute", o.Home)
}

// agentVmRSS finds a node under home whose run phase has begun and
// returns the VmRSS of its agent and that of the phase's bash (its process
// group's leader), in KiB. The agent is the pid the node recorded, or else
// (a build whose local nodes one agent program ran for the whole home) the
// sortie-agent process with an argument under home.
func agentVmRSS(home string) (agent, task int64, ok bool) {
	pgids, _ := filepath.Glob(filepath.Join(home, "local", "clusters", "*", "node-*", "pgid.run"))
	more, _ := filepath.Glob(filepath.Join(home, "local", "clusters", "*", "node-*", "*", "pgid.run"))
	for _, f := range append(pgids, more...) {
		dir := filepath.Dir(f)
		pgid, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid := ""
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
			pid = strings.TrimSpace(string(b))
			if !isAgent(pid, "") {
				continue
			}
		} else if pid = agentUnder(home); pid == "" {
			continue
		}
		agent, aok := vmRSS(pid)
		task, tok := vmRSS(strings.TrimSpace(string(pgid)))
		if aok && tok {
			return agent, task, true
		}
	}
	return 0, 0, false
}

// isAgent says whether process pid is a sortie-agent, with an argument
// under dir when dir is given.
func isAgent(pid, dir string) bool {
	cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
	args := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")
	if err != nil || !strings.HasPrefix(filepath.Base(args[0]), "sortie-agent") {
		return false
	}
	return dir == "" || slices.ContainsFunc(args[1:], func(a string) bool { return strings.HasPrefix(a, dir+"/") })
}

// agentUnder is the pid of a sortie-agent process with an argument under
// home, "" when there is none.
func agentUnder(home string) string {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil && isAgent(e.Name(), home) {
			return e.Name()
		}
	}
	return ""
}

// vmRSS is the VmRSS of process pid in KiB.
func vmRSS(pid string) (int64, bool) {
	n, err := strconv.Atoi(pid)
	if err != nil {
		return 0, false
	}
	// A process without memory (a zombie) has no VmRSS line.
	u, err := ReadUsage(n)
	return u.RSSKiB, err == nil && u.RSSKiB > 0
}

// plainLoop runs n `bash -c true`, width at a time, and returns the wall
// time.
func plainLoop(ctx context.Context, n, width int) (time.Duration, error) {
	work := make(chan int, n)
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	var wg sync.WaitGroup
	errs := make(chan error, width)
	t0 := time.Now()
	for w := 0; w < width; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := exec.CommandContext(ctx, "bash", "-c", "true").Run(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	select {
	case err := <-errs:
		return 0, fmt.Errorf("bash -c true: %w", err)
	default:
	}
	return el, nil
}
