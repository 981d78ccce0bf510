package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/schema"
	"sortie/strategy"
)

// podCloud is a cloud whose nodes run the task themselves, as pods do
// (provision.TaskRunner): what StartTask was handed, each node's status and
// log are the test's to read and set.
type podCloud struct {
	fakeCloud
	limit int64

	mu      sync.Mutex
	started map[string][]provision.Task       // by cluster
	status  map[string][]provision.TaskStatus // by cluster, per rank
	logs    map[string][]string               // by cluster, per rank
	stopped map[string][]int                  // by cluster
	reads   map[int]int                       // ReadTaskLog calls, by rank
	within  map[int]time.Duration             // the time ReadTaskLog was given, by rank
	execs   int                               // Runner calls: none expected
}

func newPodCloud() *podCloud {
	return &podCloud{fakeCloud: fakeCloud{clusters: map[string]*provision.Cluster{}}, limit: 1 << 10,
		started: map[string][]provision.Task{}, status: map[string][]provision.TaskStatus{},
		logs: map[string][]string{}, stopped: map[string][]int{}, reads: map[int]int{},
		within: map[int]time.Duration{}}
}

var _ provision.TaskRunner = (*podCloud)(nil)

func (f *podCloud) Name() string { return "kubernetes" }
func (f *podCloud) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "kubernetes", Region: "ctx", Zone: "ns"}}, nil
}

func (f *podCloud) Launch(_ context.Context, s provision.ClusterSpec) (*provision.Cluster, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cl := &provision.Cluster{Name: s.Name, Placement: s.Placement}
	for rank := range s.NumNodes {
		cl.Nodes = append(cl.Nodes, provision.Node{Rank: rank, InstanceID: fmt.Sprintf("%s-%d", s.Name, rank), State: provision.NodeRunning})
	}
	f.clusters[s.Name] = cl
	f.status[s.Name] = make([]provision.TaskStatus, s.NumNodes)
	f.logs[s.Name] = make([]string, s.NumNodes)
	return cl, nil
}

func (f *podCloud) Runner(context.Context, *provision.Cluster, int) (provision.Runner, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs++
	return nil, errors.New("pods run no commands")
}

func (f *podCloud) StartTask(_ context.Context, c *provision.Cluster, t provision.Task) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started[c.Name] = append(f.started[c.Name], t)
	for i := range f.status[c.Name] {
		f.status[c.Name][i].Started = true
	}
	return nil
}

func (f *podCloud) TaskStatus(_ context.Context, c *provision.Cluster, rank int) (provision.TaskStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[c.Name][rank], nil
}

func (f *podCloud) ReadTaskLog(ctx context.Context, c *provision.Cluster, rank int, off int64, max int) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads[rank]++
	if d, ok := ctx.Deadline(); ok {
		f.within[rank] = time.Until(d)
	}
	log := f.logs[c.Name][rank]
	if off >= int64(len(log)) {
		return nil, nil
	}
	b := []byte(log[off:])
	if len(b) > max {
		b = b[:max]
	}
	return b, nil
}

func (f *podCloud) StopTask(_ context.Context, c *provision.Cluster, rank int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped[c.Name] = append(f.stopped[c.Name], rank)
	return nil
}

func (f *podCloud) FilesLimit() int64 { return f.limit }

// exit ends node rank's task of cluster with code in phase, with log.
func (f *podCloud) exit(cluster string, rank, code int, phase, log string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status[cluster][rank] = provision.TaskStatus{Started: true, Done: true, ExitCode: code, Phase: phase}
	f.logs[cluster][rank] = log
}

// podJob stores a job of yaml, its files under a base folder of its own.
func podJob(t *testing.T, c *Controller, yaml string, files map[string]string) int64 {
	t.Helper()
	base := t.TempDir()
	for name, body := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := schema.Parse([]byte(yaml), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Store.CreateJob(context.Background(), &store.Job{Name: "j", Spec: b, NumTasks: 1, BaseDir: base}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func podController(t *testing.T, cloud *podCloud) *Controller {
	t.Helper()
	c := newTestController(t, &cloud.fakeCloud)
	c.Providers = oneCloud{cloud}
	return c
}

// TestATaskRunnerCloudIsDrivenThroughItsProvider: on a cloud whose nodes
// run the task themselves, the task is handed to every node at once (the
// environment the same on each: the provider sets each node's rank), the
// exit codes and phases come from the provider, a failed attempt's other
// node is stopped through it and every node's log kept; a restart after
// exit code 29 launches a new cluster; no command is ever run on a node.
func TestATaskRunnerCloudIsDrivenThroughItsProvider(t *testing.T) {
	cloud := newPodCloud()
	c := podController(t, cloud)
	id := podJob(t, c, `
resources: {cloud: kubernetes, job_recovery: {recover_on_exit_codes: [29]}}
num_nodes: 2
workdir: code
file_mounts: {/data/x.csv: x.csv}
envs: {LR: "0.1"}
run: train
`, map[string]string{"code/train.py": "print(1)", "x.csv": "a,b"})
	a := untilRunning(t, c, id)
	first := a.Cluster
	starts := cloud.started[first]
	if len(starts) != 1 {
		t.Fatalf("StartTask called %d times, want once for both nodes", len(starts))
	}
	env := starts[0].Env
	if env["LR"] != "0.1" || env["SORTIE_ATTEMPT"] != "1" || env["SORTIE_NUM_NODES"] != "2" || env["SKYPILOT_TASK_ID"] != fmt.Sprintf("sortie-%d-0", id) {
		t.Errorf("env %v", env)
	}
	for _, k := range []string{"SORTIE_NODE_RANK", "SKYPILOT_NODE_RANK", "SORTIE_NODE_IPS"} {
		if _, ok := env[k]; ok {
			t.Errorf("env has %s, which differs per node: the provider sets it", k)
		}
	}
	got := map[string]string{}
	for _, f := range starts[0].Files {
		got[f.Path] = string(f.Data)
	}
	if len(got) != 2 || got["train.py"] != "print(1)" || got["/data/x.csv"] != "a,b" {
		t.Errorf("files handed over: %v", got)
	}

	// Node 0 exits 29 while node 1 runs: the attempt ends, node 1 is
	// stopped, the logs are kept, and the restart is on a new cluster.
	cloud.exit(first, 0, 29, provision.PhaseRun, "epoch 1\n")
	cloud.logs[first][1] = "still going\n"
	_, a = step(t, c, id)
	if a.State != lifecycle.AttemptEnded || a.Outcome != string(strategy.UserFailure) {
		t.Fatalf("attempt %+v, want ended user_failure", a)
	}
	if fmt.Sprint(cloud.stopped[first]) != "[1]" {
		t.Errorf("stopped %v, want node 1 alone", cloud.stopped[first])
	}
	for rank, want := range []string{"epoch 1\n", "still going\n"} {
		b, err := os.ReadFile(home.NodeLog(c.Config.Home, id, 0, 1, rank))
		if err != nil || string(b) != want {
			t.Errorf("kept log of node %d: %q, %v; want %q", rank, b, err, want)
		}
	}
	a = untilRunning(t, c, id)
	if a.Attempt != 2 || a.Cluster == first {
		t.Fatalf("attempt %d on %s; want attempt 2 on a new cluster", a.Attempt, a.Cluster)
	}
	if !hasString(cloud.terminated, first) {
		t.Errorf("the first cluster %s was not torn down (terminated %v)", first, cloud.terminated)
	}
	if env := cloud.started[a.Cluster][0].Env; env["SORTIE_ATTEMPT"] != "2" {
		t.Errorf("restart's env %v", env)
	}

	cloud.exit(a.Cluster, 0, 0, provision.PhaseRun, "done\n")
	cloud.exit(a.Cluster, 1, 0, provision.PhaseRun, "done\n")
	j, _ := step(t, c, id)
	if j.Status != lifecycle.Succeeded {
		t.Fatalf("job %s, want SUCCEEDED", j.Status)
	}
	as, _ := c.Store.Attempts(context.Background(), id)
	if got := fmt.Sprint(codesOf(as)); got != "[[29 -1] [0 0]]" {
		t.Errorf("exit codes %s", got)
	}
	if cloud.execs != 0 {
		t.Errorf("%d runners asked for; a pod runs no command", cloud.execs)
	}
}

// TestATakenNodesLogIsKeptWhileItCanBeRead: a node the cloud took away
// whose log the provider says can still be read (a pod in its grace
// period, or whose log the provider read as it went) has it kept when the
// attempt ends, given its task's termination grace beyond the log
// deadline to end writing it; one that says nothing is never read, and a
// note says why.
func TestATakenNodesLogIsKeptWhileItCanBeRead(t *testing.T) {
	cloud := newPodCloud()
	c := podController(t, cloud)
	c.LogDeadline = time.Second
	id := podJob(t, c, "resources: {cloud: kubernetes, job_recovery: {termination_grace: 40s}}\nnum_nodes: 3\nrun: train\n", nil)
	a := untilRunning(t, c, id)
	cloud.mu.Lock()
	nodes := cloud.clusters[a.Cluster].Nodes
	nodes[0].State, nodes[0].Reason, nodes[0].LogReadable = provision.NodePreempted, "pod deleted", true
	nodes[1].State, nodes[1].Reason = provision.NodePreempted, "pod deleted"
	cloud.logs[a.Cluster][0] = "epoch 3\ngot SIGTERM, checkpoint saved\n"
	cloud.logs[a.Cluster][1] = "never read\n"
	cloud.logs[a.Cluster][2] = "running\n"
	cloud.mu.Unlock()
	_, a = step(t, c, id)
	if a.State != lifecycle.AttemptEnded || a.Outcome != string(strategy.Preempted) {
		t.Fatalf("attempt %+v, want ended preempted", a)
	}
	b, err := os.ReadFile(home.NodeLog(c.Config.Home, id, 0, 1, 0))
	if err != nil || string(b) != "epoch 3\ngot SIGTERM, checkpoint saved\n" {
		t.Errorf("kept log of the taken node 0: %q, %v", b, err)
	}
	if _, err := os.Stat(home.NodeLogMissing(c.Config.Home, id, 0, 1, 0)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("node 0's log is kept, yet a note says it is not (%v)", err)
	}
	note, err := os.ReadFile(home.NodeLogMissing(c.Config.Home, id, 0, 1, 1))
	if want := "node 1 was preempted when the attempt ended (pod deleted)"; err != nil || strings.TrimSpace(string(note)) != want {
		t.Errorf("note of node 1: %q, %v; want %q", note, err, want)
	}
	cloud.mu.Lock()
	defer cloud.mu.Unlock()
	if cloud.reads[1] != 0 {
		t.Errorf("node 1, whose log cannot be read, was read %d times", cloud.reads[1])
	}
	if w := cloud.within[0]; w <= 40*time.Second || w > 41*time.Second {
		t.Errorf("the taken node's log was read within %s, want the grace (40s) and the log deadline (1s)", w)
	}
	if w := cloud.within[2]; w <= 0 || w > time.Second {
		t.Errorf("the running node's log was read within %s, want the log deadline (1s)", w)
	}
}

// TestATaskRunnerSetupFailureIsFailedSetup: the phase the provider names
// tells a setup failure from a run failure.
func TestATaskRunnerSetupFailureIsFailedSetup(t *testing.T) {
	cloud := newPodCloud()
	c := podController(t, cloud)
	id := podJob(t, c, "resources: {cloud: kubernetes}\nsetup: pip install x\nrun: train\n", nil)
	a := untilRunning(t, c, id)
	cloud.exit(a.Cluster, 0, 3, provision.PhaseSetup, "no such package\n")
	if j, _ := step(t, c, id); j.Status != lifecycle.FailedSetup {
		t.Errorf("job %s, want FAILED_SETUP", j.Status)
	}
}

// TestATaskRunnerRefusesWhatItsNodesCannotDo: files past the provider's
// limit, buckets and a git workdir end the job FAILED_PRECHECKS at the
// start, naming the field; the task is never handed over.
func TestATaskRunnerRefusesWhatItsNodesCannotDo(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		files      map[string]string
		want       []string
	}{
		{"workdir over the limit", "resources: {cloud: kubernetes}\nworkdir: code\nrun: x\n",
			map[string]string{"code/a": strings.Repeat("x", 600), "code/b": strings.Repeat("y", 600)}, []string{"workdir:", "1 KiB"}},
		{"mounts over the limit", "resources: {cloud: kubernetes}\nfile_mounts: {/d: big}\nrun: x\n",
			map[string]string{"big": strings.Repeat("x", 2000)}, []string{"file_mounts./d:", "1 KiB"}},
		{"bucket", "resources: {cloud: kubernetes}\nfile_mounts: {/ckpt: s3://my-bucket/ckpt}\nrun: x\n", nil, []string{"file_mounts./ckpt: buckets are not mounted on kubernetes"}},
		{"git workdir", "resources: {cloud: kubernetes}\nworkdir: {url: https://example.com/r.git, ref: main}\nrun: x\n", nil, []string{"workdir: a git repository (https://example.com/r.git) is not cloned on kubernetes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloud := newPodCloud()
			c := podController(t, cloud)
			id := podJob(t, c, tc.yaml, tc.files)
			var j *store.Job
			for range 5 {
				if j, _ = step(t, c, id); j.Status.Terminal() {
					break
				}
			}
			st, reason := jobStatus(t, c, id)
			if st != lifecycle.FailedPrechecks {
				t.Fatalf("job %s (%s), want FAILED_PRECHECKS", st, reason)
			}
			for _, w := range tc.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q does not say %q", reason, w)
				}
			}
			if len(cloud.started) != 0 {
				t.Errorf("the task was handed over: %v", cloud.started)
			}
		})
	}
}

func hasString(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

func codesOf(as []*store.Attempt) [][]int {
	var out [][]int
	for _, a := range as {
		var cs []int
		for _, c := range a.ExitCodes {
			if c == nil {
				cs = append(cs, -1)
			} else {
				cs = append(cs, *c)
			}
		}
		out = append(out, cs)
	}
	return out
}
