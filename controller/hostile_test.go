package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// panicky launches like fakeCloud, except that launching a cluster whose
// name starts with prefix panics, as a bug tripped by bad state would.
type panicky struct {
	*fakeCloud
	prefix string
}

func (panicky) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "local", Region: "local", Zone: "local-a"}}, nil
}

func (p panicky) Launch(ctx context.Context, s provision.ClusterSpec) (*provision.Cluster, error) {
	if strings.HasPrefix(s.Name, p.prefix) {
		var m map[string]*provision.Cluster
		m["x"].Name = "boom" // a nil map entry, as a corrupt state file once gave
	}
	return p.fakeCloud.Launch(ctx, s)
}

func jobStatus(t *testing.T, c *Controller, id int64) (lifecycle.Status, string) {
	t.Helper()
	j, err := c.Store.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j.Status, j.FailureReason + " " + j.StatusReason
}

func TestAPanickingStepEndsOnlyItsJob(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	bad := createJob(t, c, "run: train\n")
	good := createJob(t, c, "run: train\n")
	c.Providers = oneCloud{panicky{cloud, provision.ClusterName(bad, 0, 1)}}
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	st, reason := jobStatus(t, c, bad)
	if st != lifecycle.FailedController || !strings.Contains(reason, "panic: assignment to entry in nil map") &&
		!strings.Contains(reason, "panic: runtime error") {
		t.Errorf("job whose step panicked: %s (%s), want FAILED_CONTROLLER naming the panic", st, reason)
	}
	if as, _ := c.Store.Attempts(ctx, bad); len(as) != 1 || as[0].State != lifecycle.AttemptEnded {
		t.Errorf("attempts of the job whose step panicked: %+v, want one, ended", as)
	}
	if st, reason := jobStatus(t, c, good); st.Terminal() {
		t.Errorf("the other job ended %s (%s); it should go on", st, reason)
	}
	if _, ok := cloud.clusters[provision.ClusterName(good, 0, 1)]; !ok {
		t.Errorf("the other job's cluster was not launched")
	}
}

func TestAClusterItsProviderCannotReadBackEndsItsJob(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	j, a := runningAttempt(t, c, cloud, "run: train\n")
	other, oa := runningAttempt(t, c, cloud, "run: train\n")
	broken := (&provision.StateError{Path: "/home/sim/state.json", Err: errors.New(`clusters["c"] is null`)}).Error()
	cloud.clusters[a.Cluster] = &provision.Cluster{Name: a.Cluster, Broken: broken}
	if err := c.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	if st, reason := jobStatus(t, c, j.ID); st != lifecycle.FailedController || !strings.Contains(reason, broken) {
		t.Errorf("job on the broken cluster: %s (%s), want FAILED_CONTROLLER saying %q", st, reason, broken)
	}
	if st, _ := jobStatus(t, c, other.ID); st.Terminal() {
		t.Errorf("the other job ended %s", st)
	}
	if as, _ := c.Store.Attempts(ctx, other.ID); as[0].State != lifecycle.AttemptRunning || as[0].Cluster != oa.Cluster {
		t.Errorf("the other job's attempt is %s", as[0].State)
	}
}

// stateless is a set of clouds whose provider cannot be opened because its
// state file cannot be read back.
type stateless struct{}

func (stateless) Provider(context.Context, string) (provision.Provider, error) {
	return nil, fmt.Errorf("open sim: %w", &provision.StateError{Path: "/home/sim/state.json", Err: errors.New("unexpected end of JSON input")})
}
func (stateless) Opened() []string { return nil }

func TestAProviderWhoseStateCannotBeReadEndsTheJobsOnIt(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	placed, a := runningAttempt(t, c, cloud, "run: train\n")
	fresh := createJob(t, c, "run: train\n")
	c.Providers = stateless{}
	for _, tc := range []struct {
		name string
		id   int64
	}{{"a job running there", placed.ID}, {"a job about to launch", fresh}} {
		j, err := c.Store.Job(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		open := a
		if tc.id == fresh {
			open = nil
		}
		if err := c.reconcile(ctx, j, open, snapshot{failed: map[string]error{"fake": errors.New("x")}}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if st, reason := jobStatus(t, c, tc.id); st != lifecycle.FailedController || !strings.Contains(reason, "state file /home/sim/state.json cannot be read back") {
			t.Errorf("%s: %s (%s), want FAILED_CONTROLLER naming the state file", tc.name, st, reason)
		}
	}
}

// logRunner answers every script with the same short log.
type logRunner struct{ dir string }

func (r logRunner) Exec(context.Context, string, io.Reader) ([]byte, error) {
	return []byte("secret output\n"), nil
}
func (r logRunner) Dir() string  { return r.dir }
func (r logRunner) Close() error { return nil }

func TestKeptLogsArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "node-0.log")
	if err := copyLog(context.Background(), node.AgentTask(logRunner{t.TempDir()}), path, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("kept log is %v, want 0600", fi.Mode().Perm())
	}
}

// quietNodes is a fake cloud whose nodes answer every script with nothing:
// a poll finds the task not started, and a start goes as far as the node
// package lets it.
type quietNodes struct{ *fakeCloud }

func (quietNodes) Runner(context.Context, *provision.Cluster, int) (provision.Runner, error) {
	return logRunner{dir: "/nodes/0"}, nil
}

// A start that fails the same way on every node and attempt (here an env
// value no process can hold, in a spec stored before launch refused it)
// ends the job FAILED_PRECHECKS at once, never a node_lost recovery.
func TestAPermanentStartErrorEndsTheJobFailedPrechecks(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	c.Providers = oneCloud{quietNodes{cloud}}
	p, err := schema.Parse([]byte("run: train\n"), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	p.Tasks[0].Envs = map[string]string{"A": "x\x00y"}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: b, NumTasks: 1}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Store.NewAttempt(ctx, id, 0, func(n int) string { return provision.ClusterName(id, 0, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	cloud.clusters[a.Cluster] = &provision.Cluster{Name: a.Cluster, Nodes: []provision.Node{{Rank: 0, State: provision.NodeRunning}}}
	if err := c.Store.MarkLaunched(ctx, a.ID, "fake", "r", "r-a", []string{"i-0"}); err != nil {
		t.Fatal(err)
	}
	as, _ := c.Store.Attempts(ctx, id)
	j, _ := c.Store.Job(ctx, id)
	if err := c.reconcile(ctx, j, as[0], snapshot{}); err != nil {
		t.Fatal(err)
	}
	st, reason := jobStatus(t, c, id)
	if st != lifecycle.FailedPrechecks || !strings.Contains(reason, "NUL byte") || !strings.Contains(reason, "node 0") {
		t.Errorf("job %s (%s), want FAILED_PRECHECKS naming the node and the NUL byte", st, reason)
	}
	if as, _ := c.Store.Attempts(ctx, id); len(as) != 1 || as[0].Outcome == string(strategy.NodeLost) {
		t.Errorf("attempts %+v, want the one, not node_lost", as)
	}
}

// A kept secrets file that does not read back ends its job FAILED_CONTROLLER
// with the reason, instead of failing the start at every tick.
func TestUnreadableKeptSecretsEndTheJob(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	c.Config.Home = t.TempDir()
	c.Providers = oneCloud{quietNodes{cloud}}
	j, a := runningAttempt(t, c, cloud, "run: train\nsecrets:\n  TOKEN: x\n")
	if err := os.MkdirAll(home.SecretsDir(c.Config.Home), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(home.Secrets(c.Config.Home, j.ID), []byte(`{"TOKEN": hunter2`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.startAttempt(ctx, j, mustTask(t, j), a); err != nil {
		t.Fatal(err)
	}
	st, reason := jobStatus(t, c, j.ID)
	if st != lifecycle.FailedController || !strings.Contains(reason, "secrets of job") || strings.Contains(reason, "hunter2") {
		t.Errorf("job %s (%s), want FAILED_CONTROLLER naming the secrets file and not their value", st, reason)
	}
}

func mustTask(t *testing.T, j *store.Job) *schema.Task {
	t.Helper()
	p, err := new(Controller).spec(j)
	if err != nil {
		t.Fatal(err)
	}
	return p.Tasks[0]
}
