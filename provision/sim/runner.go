package sim

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"sortie/provision"
	"sortie/provision/node"
)

// The envs of a task that change how its hollow nodes play it.
const (
	// EnvRunTime is a Go duration: the task runs this long instead of
	// sim.run_time.
	EnvRunTime = "SIM_RUN_TIME"
	// EnvExitCode is 0-255: every attempt of the task exits with it,
	// whatever sim.exit_codes says.
	EnvExitCode = "SIM_EXIT_CODE"
	// EnvExitZone, with EnvExitCode, names the one zone where the task
	// exits with that code; in every other zone it exits 0 (a failure
	// that is the placement's, not the inputs').
	EnvExitZone = "SIM_EXIT_ZONE"
	// EnvProgress is a whole number N > 0: attempt A of the task reports
	// progress A×N as soon as it starts, as a task writing to
	// $SORTIE_PROGRESS would, so that each attempt gets further.
	EnvProgress = "SIM_PROGRESS"
)

// task is one task started (or stopped before it started) in one node
// directory. Exported fields are its saved state.
type task struct {
	Key     taskKey    `json:"key"`
	Started *time.Time `json:"started,omitempty"`
	// Stopped is when Stop ended it; set before Started when Stop came
	// first, and then the task ends as soon as it starts.
	Stopped *time.Time `json:"stopped,omitempty"`
	// StopAsked is set by every Stop, as the node's stop file is, whether
	// or not the task was still running.
	StopAsked bool `json:"stop_asked,omitempty"`
	Code      int  `json:"code"` // the exit code it ends with, unless stopped
	Setup     bool `json:"setup,omitempty"`
	// RunTime, when set (the task's SIM_RUN_TIME env), is this task's run
	// time instead of the provider's.
	RunTime  time.Duration `json:"run_time,omitempty"`
	Reported bool          `json:"reported,omitempty"` // a Poll has shown it done
	// Progress is what the task reports to $SORTIE_PROGRESS (EnvProgress);
	// nil when nothing.
	Progress *int64 `json:"progress,omitempty"`
	// NodeKey is the key Start gave the node, which its exit code carries
	// a tag of, as a real agent's record does; nil when none.
	NodeKey []byte `json:"node_key,omitempty"`
}

// status is the task's state at now, as the node package reports it.
func (t *task) status(runTime time.Duration, now time.Time) node.Status {
	if t == nil || t.Started == nil {
		return node.Status{}
	}
	if t.RunTime > 0 {
		runTime = t.RunTime
	}
	st := node.Status{Started: true, Phase: node.PhaseRun, AgentAlive: true, StopAsked: t.StopAsked, Progress: t.Progress}
	switch {
	case t.Stopped != nil:
		st.Done, st.ExitCode, st.AgentAlive, st.Stopped = true, 143, false, true
	case !now.Before(t.Started.Add(runTime)):
		st.Done, st.ExitCode, st.AgentAlive = true, t.Code, false
	}
	return st
}

// log is the task's log at now: what a hollow node has to say.
func (t *task) log(c *cluster, rank int, runTime time.Duration, now time.Time) []byte {
	if t == nil || t.Started == nil {
		return nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "sim: job %d task %d attempt %d on %s node %d (%s)\n", t.Key.Job, t.Key.Task, t.Key.Attempt, c.Name, rank, c.Nodes[rank].ID)
	if t.Setup {
		b.WriteString("sim: setup done\n")
	}
	if st := t.status(runTime, now); st.Done {
		if t.Stopped != nil {
			b.WriteString("sim: stopped (SIGTERM)\n")
		}
		fmt.Fprintf(&b, "sim: exit %d\n", st.ExitCode)
	}
	return b.Bytes()
}

// Runner reaches node rank of c.
func (p *Provider) Runner(ctx context.Context, c *provision.Cluster, rank int) (provision.Runner, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.syncIn(c.Name)
	defer p.syncOut(c.Name)
	cl := p.clusters[c.Name]
	if cl == nil {
		return nil, fmt.Errorf("reach %s node %d: no such sim cluster", c.Name, rank)
	}
	if rank < 0 || rank >= len(cl.Nodes) {
		return nil, fmt.Errorf("reach %s node %d: the cluster has %d nodes", c.Name, rank, len(cl.Nodes))
	}
	return &runner{p: p, cluster: c.Name, rank: rank}, nil
}

// runner answers the node package's scripts for one hollow node.
type runner struct {
	p       *Provider
	cluster string
	rank    int
}

func (r *runner) Dir() string  { return "/sim/" + r.cluster + "/node-" + strconv.Itoa(r.rank) }
func (r *runner) Close() error { return nil }

// Exec answers a script of package node as that script would on a real
// node; any other command fails, as hollow nodes run none.
func (r *runner) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	req, ok := node.Decode(script)
	if !ok {
		line, _, _ := strings.Cut(strings.TrimSpace(script), "\n")
		return nil, &provision.ExitError{Code: 127, Stderr: fmt.Sprintf("sim: hollow nodes run no commands, only the node package's scripts; got %q", line)}
	}
	var files map[string][]byte
	var key []byte
	switch req.Op {
	case node.OpStart:
		var err error
		if key, files, err = node.StartInput(stdin); err != nil {
			return nil, &provision.ExitError{Code: 2, Stderr: err.Error()}
		}
	case node.OpUpload, node.OpUploadFile:
		// The uploader waits for its stream to be read whole.
		if stdin != nil {
			if _, err := io.Copy(io.Discard, stdin); err != nil {
				return nil, err
			}
		}
	}
	p := r.p
	p.mu.Lock()
	p.syncIn(r.cluster)
	now := p.cfg.Now()
	c := p.clusters[r.cluster]
	if c == nil {
		p.syncOut()
		p.mu.Unlock()
		return nil, fmt.Errorf("reach %s node %d: the node is gone", r.cluster, r.rank)
	}
	if st, _ := c.state(r.rank, now); st != provision.NodeRunning {
		p.syncOut()
		p.mu.Unlock()
		return nil, fmt.Errorf("reach %s node %d: the node is %s", r.cluster, r.rank, st)
	}
	n := c.Nodes[r.rank]
	t := n.Tasks[req.Dir]
	var out []byte
	var line string
	switch req.Op {
	case node.OpStart:
		line = p.start(c, n, r.rank, req.Dir, files, key, now)
	case node.OpPoll:
		st := t.status(p.cfg.RunTime, now)
		if st.Done && !t.Reported {
			t.Reported = true
			if st.ExitCode != 0 && t.Stopped == nil {
				p.seenEnd(t.Key, now)
			}
			p.changed()
		}
		var key []byte
		if t != nil {
			key = t.NodeKey
		}
		out = node.FormatStatusKey(st, key)
	case node.OpReadLog:
		out = window(t.log(c, r.rank, p.cfg.RunTime, now), req.Vars["FROM"], req.Vars["MAX"])
	case node.OpEngine:
		// Hollow nodes run no containers: a task's image changes nothing
		// of how they play it, so any engine will do.
		out = []byte("docker\n")
	case node.OpClone:
		// Nor do they hold files: a git workdir is accepted and ignored.
	case node.OpStop:
		if t == nil {
			t = &task{}
			n.tasks()[req.Dir] = t
		}
		if t.Stopped == nil && !t.status(p.cfg.RunTime, now).Done {
			t.Stopped = &now
		}
		t.StopAsked = true
		p.changed()
	}
	p.syncOut(r.cluster)
	save := p.saveDue(now)
	p.mu.Unlock()
	p.decisions.write(line)
	p.logSave(save())
	return out, nil
}

func (n *hollowNode) tasks() map[string]*task {
	if n.Tasks == nil {
		n.Tasks = map[string]*task{}
	}
	return n.Tasks
}

// start starts a task in dir of node rank unless one was started there
// already, counts the start, arms the cluster's planned preemption, and
// returns a decision log line; p.mu is held.
func (p *Provider) start(c *cluster, n *hollowNode, rank int, dir string, files map[string][]byte, key []byte, now time.Time) string {
	t := n.Tasks[dir]
	if t != nil && t.Started != nil {
		return ""
	}
	if t == nil {
		t = &task{}
		n.tasks()[dir] = t
	}
	env, _ := node.ParseEnv(files["env"])
	t.Key = envKey(env, c)
	t.Started = &now
	t.NodeKey = key
	t.Setup = len(files["setup.sh"]) > 0
	t.Code = p.cfg.ExitCode(t.Key.Job, t.Key.Task, t.Key.Attempt)
	// A task may set its own run time and exit code, so that one sim
	// holds jobs that run long beside jobs that restart again and again.
	if d, err := time.ParseDuration(env[EnvRunTime]); err == nil && d > 0 {
		t.RunTime = d
	}
	if code, err := strconv.Atoi(env[EnvExitCode]); err == nil && code >= 0 && code <= 255 {
		t.Code = code
		if z := env[EnvExitZone]; z != "" && z != c.Zone {
			t.Code = 0
		}
	}
	if n, err := strconv.ParseInt(env[EnvProgress], 10, 64); err == nil && n > 0 {
		v := n * int64(t.Key.Attempt)
		t.Progress = &v
	}
	p.starts[StartKey(t.Key.Job, t.Key.Task, t.Key.Attempt, rank)]++
	if t.Stopped != nil {
		// Stopped before it began: the agent begins no phase.
		t.Stopped = &now
	}
	if c.PreemptFrac > 0 && c.PreemptAt == nil {
		at := now.Add(time.Duration(c.PreemptFrac * float64(p.cfg.RunTime)))
		c.PreemptAt = &at
	}
	c.Running = t.Key
	p.changed()
	if p.shared != nil {
		// In a shared cloud the start happens when the cluster's record
		// says so, as a node's own claim says so on a machine: the record
		// is written before the start is counted, so a process killed in
		// between leaves a start that the next one sees (and never
		// repeats), not a counted start the record does not hold.
		if err := p.write(c.Name); err != nil {
			p.cfg.Log.Warn("sim: cluster not saved; the other replicas see it as it was", "cluster", c.Name, "err", err)
		}
	}
	p.countStart(StartKey(t.Key.Job, t.Key.Task, t.Key.Attempt, rank))
	return p.requested(t.Key)
}

// StartKey names one start of a task on a node in State.Starts.
func StartKey(job int64, task, attempt, rank int) string {
	return fmt.Sprintf("%d/%d/%d/%d", job, task, attempt, rank)
}

// envKey reads the task's job, task and attempt from the environment the
// controller gives it, else from the cluster it runs on.
func envKey(env map[string]string, c *cluster) taskKey {
	k := c.Running
	if v, err := strconv.ParseInt(env["SORTIE_JOB_ID"], 10, 64); err == nil {
		k.Job = v
	}
	if id := env["SORTIE_TASK_ID"]; id != "" {
		if i := strings.LastIndexByte(id, '-'); i >= 0 {
			if v, err := strconv.Atoi(id[i+1:]); err == nil {
				k.Task = v
			}
		}
	}
	if v, err := strconv.Atoi(env["SORTIE_ATTEMPT"]); err == nil {
		k.Attempt = v
	}
	if k.Attempt == 0 {
		k.Attempt = 1
	}
	return k
}

// window is b from the 1-based byte from, at most max bytes, as
// `tail -c +FROM | head -c MAX` prints it.
func window(b []byte, from, max string) []byte {
	f, err := strconv.Atoi(from)
	if err != nil || f < 1 {
		f = 1
	}
	if f-1 >= len(b) {
		return nil
	}
	b = b[f-1:]
	if m, err := strconv.Atoi(max); err == nil && m >= 0 && m < len(b) {
		b = b[:m]
	}
	return b
}
