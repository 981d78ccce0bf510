package storm

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mattn/go-sqlite3"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/daemon"
	"sortie/controller/service"
	"sortie/strategy"
)

// LocalOptions shape a storm on the local provider.
type LocalOptions struct {
	Options
	// Aimed of the kills wait for a pause point first (an attempt's end
	// known or recorded, a node's start begun or done), in turn.
	Aimed int
	// Preempts are nodes taken away with `sortie local preempt`.
	Preempts int
	// DiskFull puts the home on a small tmpfs (as root) and fills it for
	// 8s once, then frees it.
	DiskFull bool
	// Outside is the tasks' own log, outside the home: each node's start
	// and the exit code it chose.
	Outside string
}

// localTask is job i's task: PLAN lists node 0's exit code by attempt,
// the last repeating; other nodes exit 0 sooner. Each node logs its start
// and, just before exiting, its code, to $OUT.
func localTask(i, nodes int, plan, out string) string {
	return fmt.Sprintf(`name: chaos-%d
num_nodes: %d
resources:
  cloud: local
  job_recovery:
    recover_on_exit_codes: [29]
    max_restarts_on_errors: 1
envs:
  PLAN: %q
  OUT: %q
  NAP: "%d"
run: |
  set -- $PLAN
  while [ $# -gt 1 ] && [ "$SORTIE_ATTEMPT" -gt $(( %d - $# )) ]; do shift; done
  code=$1
  nap=$NAP
  if [ "$SORTIE_NODE_RANK" != 0 ]; then code=0; nap=0.3; fi
  echo "start $SORTIE_JOB_ID $SORTIE_ATTEMPT $SORTIE_NODE_RANK" >> "$OUT"
  sleep $nap
  echo "exit $SORTIE_JOB_ID $SORTIE_ATTEMPT $SORTIE_NODE_RANK $code $(date +%%s%%N)" >> "$OUT"
  exit $code
`, i, nodes, plan, out, 2+i%3, len(strings.Fields(plan))+1)
}

// plans are node 0's exit codes by attempt: success, a listed code then
// success, a budgeted failure then success, and failures that use up the
// budget.
var plans = []string{"0", "0", "29 0", "1 0", "3", "29 29 0", "0", "3 0"}

// RunLocal runs o.Jobs real jobs on the local provider while the
// controller is killed o.Kills times.
func RunLocal(ctx context.Context, o LocalOptions) (*Result, error) {
	r := &Result{Cloud: "local", Jobs: o.Jobs}
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return r, err
	}
	full := &diskFull{}
	if o.DiskFull {
		if err := full.mount(o.Home); err != nil {
			r.DiskFull = "not tried: " + err.Error()
			full = nil
		} else {
			defer full.unmount()
		}
	} else {
		full = nil
	}
	work := filepath.Join(filepath.Dir(o.Outside), "local-tasks")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return r, err
	}
	if err := os.WriteFile(filepath.Join(o.Home, "config.yaml"), []byte(`controller:
  poll_interval: 200ms
  restart_backoff_initial: 100ms
  restart_backoff_max: 500ms
  launch_backoff_initial: 200ms
  launch_backoff_max: 1s
`), 0o600); err != nil {
		return r, err
	}
	files := make([]string, o.Jobs)
	for i := range files {
		nodes := 1
		if i%3 == 0 {
			nodes = 2
		}
		plan := plans[(uint64(i)+o.Seed)%uint64(len(plans))]
		files[i] = filepath.Join(work, fmt.Sprintf("task-%d.yaml", i))
		if err := os.WriteFile(files[i], []byte(localTask(i, nodes, plan, o.Outside)), 0o600); err != nil {
			return r, err
		}
	}
	env := []string{}
	if o.Aimed > 0 {
		env = append(env, "SORTIE_PAUSE_AT=all", "SORTIE_PAUSE_FOR=300ms")
	}
	x, err := begin(ctx, "local", o.Options, env)
	if err != nil {
		return r, err
	}
	defer x.close()
	c, db := x.c, x.db
	subErr := make(chan error, 1)
	go func() {
		subErr <- submitFiles(ctx, o.Home, files, submitSpan(o.Options), func() { r.RefusedWhileFull++ })
	}()

	// controller.log is slog JSON, one object a line.
	points := []string{`"point":"ended"`, `"point":"starting"`, `"point":"ending"`, `"point":"started"`}
	pw := &pauseWatcher{path: filepath.Join(o.Home, "controller.log")}
	aimEvery, preemptEvery := 0, 0
	if o.Aimed > 0 {
		aimEvery = max(o.Kills/o.Aimed, 1)
	}
	if o.Preempts > 0 {
		preemptEvery = max(o.Kills/o.Preempts, 1)
	}
	fullAt := o.Kills * 2 / 3
	preempted := map[[2]int64]bool{}
	between := func(k int) error {
		if preemptEvery > 0 && k%preemptEvery == 1%preemptEvery && r.Preempts < o.Preempts {
			if id, att, ok := preemptOne(ctx, db, c); ok {
				preempted[[2]int64{id, int64(att)}] = true
				r.Preempts++
				fmt.Fprintf(o.Progress, "local: preempted job %d attempt %d node 0\n", id, att)
			}
		}
		if full != nil && k == fullAt {
			if err := full.fill(ctx, 8*time.Second, o.Progress); err != nil {
				r.DiskFull = "failed: " + err.Error()
			} else {
				r.DiskFull = "filled and freed"
			}
		}
		if aimEvery > 0 && k%aimEvery == 0 && r.Aimed < o.Aimed {
			// The points in turn; when the one due does not come within
			// 8s (no start left to make, say), the next point of any kind.
			want := points[r.Aimed%len(points)]
			pw.skip()
			start := time.Now()
			deadline := start.Add(20 * time.Second)
			for time.Now().Before(deadline) {
				line, err := pw.next(ctx, time.Until(deadline))
				if err != nil {
					break
				}
				if strings.Contains(line, want) || time.Since(start) > 8*time.Second {
					r.Aimed++
					fmt.Fprintf(o.Progress, "local: kill at %s\n", line)
					break
				}
			}
		}
		return nil
	}
	if err := storm(ctx, c, o.Options, r, between); err != nil {
		return r, err
	}
	jobs, err := x.settle(ctx, o.Options, r, subErr, strategy.Policy{MaxRestartsOnErrors: 1, RecoverOnExitCodes: []int{29}})
	if err != nil {
		return r, err
	}
	if err := r.checkLocalLog(jobs, o.Outside, preempted, full); err != nil {
		return r, err
	}
	r.checkLocalLeftovers(o.Home)
	return r, nil
}

// submitFiles launches each file through the service the CLI uses,
// spread over span.
func submitFiles(ctx context.Context, home string, files []string, span time.Duration, refused func()) error {
	svc, err := service.Open(ctx, home, clouds.Light())
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.StartDaemon = func(context.Context, string) error { return nil }
	svc.FindDaemon = nil
	pause := span / time.Duration(max(len(files), 1))
	for i, f := range files {
		// A launch refused because the home's disk is full stored nothing
		// (its user sees the error and launches again): so does this, once
		// the disk has room, for at most 30s.
		giveUp := time.Now().Add(30 * time.Second)
		for {
			_, err := svc.Launch(ctx, contract.LaunchRequest{File: f, Dir: filepath.Dir(f), RetryFailed: true})
			if err == nil {
				break
			}
			if !diskFullError(err) || time.Now().After(giveUp) {
				return fmt.Errorf("submit job %d of %d: %w", i+1, len(files), err)
			}
			refused()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
		if p := daemon.Running(home); p > 0 {
			_ = syscall.Kill(p, syscall.SIGUSR1)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
	return nil
}

// preemptOne takes node 0 of a running job away with `sortie local
// preempt, as a spot interruption would. A job may end between the choice
// and the preempt: then another is tried, up to five.
func preemptOne(ctx context.Context, db *sql.DB, c *ctl) (int64, int, bool) {
	for try := 0; try < 5; try++ {
		var id int64
		var att int
		err := db.QueryRowContext(ctx, `SELECT job_id, attempt FROM attempts WHERE state = 'running' ORDER BY RANDOM() LIMIT 1`).Scan(&id, &att)
		if err != nil {
			return 0, 0, false
		}
		cmd := exec.CommandContext(ctx, c.cliBin(), "local", "preempt", strconv.FormatInt(id, 10), "--node", "0")
		cmd.Env = c.env
		out, err := cmd.CombinedOutput()
		if err == nil {
			return id, att, true
		}
		fmt.Fprintf(c.log, "local: preempt %d: %v: %s", id, err, out)
	}
	return 0, 0, false
}

func (c *ctl) cliBin() string { return filepath.Join(filepath.Dir(c.bin), "sortie") }

// logged is what the tasks' log says of one node of one attempt.
type logged struct {
	starts int
	exited bool
	code   int
	at     time.Time
}

func readTaskLog(path string) (map[[3]int64]*logged, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[[3]int64]*logged{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[[3]int64]*logged{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		var k [3]int64
		for i := 0; i < 3; i++ {
			k[i], _ = strconv.ParseInt(f[i+1], 10, 64)
		}
		l := out[k]
		if l == nil {
			l = &logged{}
			out[k] = l
		}
		switch {
		case f[0] == "start":
			l.starts++
		case f[0] == "exit" && len(f) >= 6:
			l.exited = true
			l.code, _ = strconv.Atoi(f[4])
			ns, _ := strconv.ParseInt(f[5], 10, 64)
			l.at = time.Unix(0, ns)
		}
	}
	return out, sc.Err()
}

// checkLocalLog compares the store with the tasks' log: each node of each
// attempt started once, every start belongs to a recorded attempt, and the
// recorded exit code of a node is the one its task chose (unknown only
// when it never chose one: stopped by sortie or preempted; a full disk is
// no excuse, and such codes are counted apart as well).
func (r *Result) checkLocalLog(jobs map[int64]*job, path string, preempted map[[2]int64]bool, full *diskFull) error {
	lg, err := readTaskLog(path)
	if err != nil {
		return err
	}
	recorded := map[[3]int64]bool{}
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		j := jobs[id]
		for _, a := range j.Attempts {
			wasPreempted := preempted[[2]int64{id, int64(a.Attempt)}]
			if a.Outcome == string(strategy.Preempted) && !wasPreempted {
				r.problem(&r.Lost, "job %d attempt %d: preempted, but no node of it was", id, a.Attempt)
			}
			for rank := range a.Codes {
				k := [3]int64{id, int64(a.Attempt), int64(rank)}
				recorded[k] = true
				l := lg[k]
				if l != nil && l.starts > 1 {
					r.problem(&r.Duplicated, "job %d attempt %d node %d: started %d times", id, a.Attempt, rank, l.starts)
				}
				got := a.Codes[rank]
				if l != nil && l.exited && got != nil && full.covers(l.at) {
					r.EndedWhileFull++
				}
				switch {
				case l != nil && l.exited && got != nil && *got == l.code:
				case l != nil && l.exited && got == nil && wasPreempted:
				case l != nil && l.exited && got == nil && full.covers(l.at):
					// A full disk is no excuse: the agent keeps a code it
					// cannot write in a file's name.
					r.UnknownWhileFull++
					r.EndedWhileFull++
					r.problem(&r.Lost, "job %d attempt %d node %d: the task exited %d while the disk was full, recorded unknown (%s)", id, a.Attempt, rank, l.code, a.Outcome)
				case l != nil && l.exited:
					counter := &r.Mismatched
					if got == nil {
						counter = &r.Lost
					}
					r.problem(counter, "job %d attempt %d node %d: the task exited %d, recorded %s (%s)", id, a.Attempt, rank, l.code, fmtCodes([]*int{got}), a.Outcome)
				case got != nil:
					r.problem(&r.Mismatched, "job %d attempt %d node %d: recorded exit code %d, but the task never chose one", id, a.Attempt, rank, *got)
				}
			}
			if a.Outcome == string(strategy.NodeLost) {
				r.problem(&r.Lost, "job %d attempt %d: node_lost %s, yet no node was lost", id, a.Attempt, fmtCodes(a.Codes))
			}
		}
	}
	for k, l := range lg {
		if !recorded[k] && l.starts > 0 {
			r.problem(&r.Duplicated, "job %d attempt %d node %d: ran, but the store has no such node's attempt", k[0], k[1], k[2])
		}
	}
	return nil
}

// checkLocalLeftovers: no local cluster and no process under the home.
func (r *Result) checkLocalLeftovers(home string) {
	dir := filepath.Join(home, "local", "clusters")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		procs := ProcessesUnder(home)
		if len(ents) == 0 && len(procs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, e := range ents {
				r.problem(&r.Leaked, "local cluster %s left", e.Name())
			}
			for _, p := range procs {
				r.problem(&r.Leaked, "process %d left under the home", p)
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ProcessesUnder lists live processes whose command line or working
// directory lies under dir: what a test left running there.
func ProcessesUnder(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", en.Name(), "stat"))
		if err != nil {
			continue
		}
		if s := string(stat); strings.Contains(s[strings.LastIndex(s, ")")+1:], " Z ") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		cwd, _ := os.Readlink(filepath.Join("/proc", en.Name(), "cwd"))
		if strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// diskFull is a small tmpfs under the home that is filled for a while.
type diskFull struct {
	dir        string
	from, till time.Time
}

func (d *diskFull) mount(dir string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root to mount a small tmpfs")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount tmpfs: %v: %s", err, strings.TrimSpace(string(out)))
	}
	d.dir = dir
	return nil
}

// unmount keeps a copy of what the home held beside it (HOME.kept: the
// store, the controller's log) and unmounts it.
func (d *diskFull) unmount() {
	if d.dir != "" {
		_ = exec.Command("cp", "-a", d.dir+"/.", d.dir+".kept").Run()
		_ = exec.Command("umount", "-l", d.dir).Run()
	}
}

// fill writes a file until the file system is full, holds it for hold,
// and removes it.
func (d *diskFull) fill(ctx context.Context, hold time.Duration, progress interface{ Write([]byte) (int, error) }) error {
	p := filepath.Join(d.dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	d.from = time.Now()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				os.Remove(p)
				return err
			}
			break
		}
	}
	// What is left of the last block too.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
	f.Close()
	fmt.Fprintf(progress, "local: the home's disk is full (%s)\n", d.from.UTC().Format("15:04:05.000"))
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	err = os.Remove(p)
	d.till = time.Now()
	fmt.Fprintf(progress, "local: the home's disk is freed (%s)\n", d.till.UTC().Format("15:04:05.000"))
	return err
}

// diskFullError says whether err is SQLite's or the kernel's "no space".
func diskFullError(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrFull || errors.Is(err, syscall.ENOSPC)
}

// covers says whether t fell while the disk was full (with a second's
// slack for writes already under way).
func (d *diskFull) covers(t time.Time) bool {
	if d == nil || d.from.IsZero() {
		return false
	}
	return !t.Before(d.from.Add(-time.Second)) && !t.After(d.till.Add(time.Second))
}
