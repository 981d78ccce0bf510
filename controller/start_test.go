package controller

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/local"
	"sortie/provision/node"
	"sortie/schema"
)

// withLocalProvider is a controller over the local provider in its own home.
// sandbox is local.sandbox, auto when not given.
func withLocalProvider(t *testing.T, sandbox ...string) (*Controller, *local.Provider) {
	t.Helper()
	c := newTestController(t, &fakeCloud{clusters: map[string]*provision.Cluster{}})
	lp := local.New(local.Config{Home: t.TempDir(), Sandbox: strings.Join(sandbox, "")})
	c.Providers = oneCloud{lp}
	t.Cleanup(func() {
		cls, _ := lp.List(context.Background())
		for _, cl := range cls {
			lp.Terminate(context.Background(), cl.Name)
		}
	})
	return c, lp
}

// storeTask stores a job of one task as the CLI would.
func storeTask(t *testing.T, c *Controller, task *schema.Task) int64 {
	t.Helper()
	task.Resources.Cloud = local.CloudName
	b, err := (&schema.Pipeline{Tasks: []*schema.Task{task}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Store.CreateJob(context.Background(), &store.Job{Name: "j", Spec: b, NumTasks: 1}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// launchAndStart runs the job's first steps (attempt, launch, start) and
// returns the job as they left it.
func launchAndStart(t *testing.T, c *Controller, id int64) *store.Job {
	t.Helper()
	ctx := context.Background()
	j, err := c.Store.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.reconcile(ctx, j, nil, snapshot{}); err != nil {
		t.Fatal(err)
	}
	j, err = c.Store.Job(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// nodeLog waits for node 0 of the job's first attempt to finish and
// returns its exit code and log.
func nodeLog(t *testing.T, c *Controller, lp *local.Provider, id int64) (int, string) {
	t.Helper()
	ctx := context.Background()
	name := provision.ClusterName(id, 0, 1)
	got, err := lp.Status(ctx, []string{name})
	if err != nil || got[name] == nil {
		t.Fatalf("cluster %s: %v, %v", name, got, err)
	}
	r, err := lp.Runner(ctx, got[name], 0)
	if err != nil {
		t.Fatal(err)
	}
	r = node.ForAttempt(r, 1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := node.Poll(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if st.Done {
			b, err := node.ReadLog(ctx, r, 0)
			if err != nil {
				t.Fatal(err)
			}
			return st.ExitCode, string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("task not done after 20s: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestGitWorkdirIsClonedOnTheNode(t *testing.T) {
	c, lp := withLocalProvider(t)
	url := bareRepo(t)
	id := storeTask(t, c, &schema.Task{WorkdirRepo: &schema.GitRepo{URL: url, Ref: "dev"}, Run: "cat f; git rev-parse --abbrev-ref HEAD"})
	if j := launchAndStart(t, c, id); j.Status != lifecycle.Running {
		t.Fatalf("job %s (%s), want RUNNING", j.Status, j.FailureReason)
	}
	if code, log := nodeLog(t, c, lp, id); code != 0 || log != "on dev\ndev\n" {
		t.Errorf("task exited %d with %q, want the dev branch's file and name", code, log)
	}

	missing := storeTask(t, c, &schema.Task{WorkdirRepo: &schema.GitRepo{URL: url, Ref: "v9"}, Run: "true"})
	j := launchAndStart(t, c, missing)
	if j.Status != lifecycle.FailedPrechecks || !strings.Contains(j.FailureReason, "v9 is not a branch, tag or commit of "+url) {
		t.Errorf("a missing ref: job %s (%s), want FAILED_PRECHECKS naming the ref", j.Status, j.FailureReason)
	}
}

func TestNoContainerEngineFailsPrechecks(t *testing.T) {
	c, _ := withLocalProvider(t)
	// This machine's own docker, asked for real, when it has a client
	// without a daemon behind it.
	if _, err := exec.LookPath("docker"); err == nil && exec.Command("docker", "info").Run() != nil {
		id := storeTask(t, c, &schema.Task{Resources: schema.Resources{ImageID: "docker:ubuntu:24.04"}, Run: "true"})
		j := launchAndStart(t, c, id)
		if j.Status != lifecycle.FailedPrechecks || !strings.Contains(j.FailureReason, "docker is installed but its engine does not answer") {
			t.Errorf("with this machine's docker client and no daemon: job %s (%s), want FAILED_PRECHECKS saying so", j.Status, j.FailureReason)
		}
	}
	bin := t.TempDir()
	for _, tool := range []string{"bash", "tail", "tr", "mkdir", "rm"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	id := storeTask(t, c, &schema.Task{Resources: schema.Resources{ImageID: "docker:ubuntu:24.04"}, Run: "true"})
	j := launchAndStart(t, c, id)
	if j.Status != lifecycle.FailedPrechecks {
		t.Fatalf("job %s (%s), want FAILED_PRECHECKS", j.Status, j.FailureReason)
	}
	for _, want := range []string{"node 0: resources.image_id docker:ubuntu:24.04", "neither docker nor podman is installed", "drop the docker: prefix"} {
		if !strings.Contains(j.FailureReason, want) {
			t.Errorf("failure reason %q lacks %q", j.FailureReason, want)
		}
	}
}

func TestDockerImageRunsTheTaskInAContainer(t *testing.T) {
	// The fake engine runs the phase on this machine and maps no volume:
	// the mount must be at its own path, as it is on a node that does not
	// sandbox (container.sh's volumes on one that does are tested in
	// provision/node).
	c, lp := withLocalProvider(t, local.SandboxOff)
	bin := t.TempDir()
	calls := filepath.Join(bin, "calls")
	fake := `#!/bin/bash
printf '%s\n' "$*" >>` + calls + `
case $1 in info) exit 0 ;; --version) echo fake; exit 0 ;; rm) exit 0 ;; run) shift ;; *) exit 1 ;; esac
while [ $# -gt 0 ]; do
	case $1 in
	--rm | --init) shift ;;
	--name | --network | -v | --gpus | --device) shift 2 ;;
	-w) cd "$2" || exit 125; shift 2 ;;
	-e) export "$2"; shift 2 ;;
	*) break ;;
	esac
done
shift
exec "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	src := filepath.Join(t.TempDir(), "model.bin")
	if err := os.WriteFile(src, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "mnt", "model.bin")
	id := storeTask(t, c, &schema.Task{
		Resources:  schema.Resources{ImageID: "docker:pytorch/pytorch:latest"},
		FileMounts: map[string]string{dst: src},
		Envs:       map[string]string{"MODEL": dst},
		Run:        `cat "$MODEL"; echo " $SORTIE_NODE_RANK"`,
	})
	if j := launchAndStart(t, c, id); j.Status != lifecycle.Running {
		t.Fatalf("job %s (%s), want RUNNING", j.Status, j.FailureReason)
	}
	if code, log := nodeLog(t, c, lp, id); code != 0 || log != "weights 0\n" {
		t.Errorf("task exited %d with %q", code, log)
	}
	b, _ := os.ReadFile(calls)
	if !strings.Contains(string(b), " pytorch/pytorch:latest /bin/sh -c ") || !strings.Contains(string(b), "-v "+dst+":"+dst) {
		t.Errorf("docker was not asked to run the image with the file mount:\n%s", b)
	}
}

// bareRepo is a file:// repository whose main branch's f says "on main"
// and whose dev branch's says "on dev".
func bareRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(src, "f"), []byte("on main\n"), 0o644)
	git("add", "f")
	git("commit", "-qm", "main")
	git("checkout", "-qb", "dev")
	os.WriteFile(filepath.Join(src, "f"), []byte("on dev\n"), 0o644)
	git("commit", "-qam", "dev")
	git("clone", "-q", "--bare", src, filepath.Join(dir, "repo.git"))
	return "file://" + filepath.Join(dir, "repo.git")
}

// A bucket URL as a plain file_mounts source (SkyPilot's string form) is
// a bucket the node's sync program copies, never a path on this machine
// to upload: the start uploads the local mounts beside it and nothing of
// the URL.
func TestBucketURLFileMountIsNotUploaded(t *testing.T) {
	c, lp := withLocalProvider(t)
	ctx := context.Background()
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "cfg.txt"), []byte("cfg\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl, err := lp.Launch(ctx, provision.ClusterSpec{Name: "sortie-url-mount", Placement: schema.Placement{Cloud: local.CloudName, Region: "local", Zone: "local-a"}, NumNodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := lp.Runner(ctx, cl, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	task := &schema.Task{FileMounts: map[string]string{"inputs": "s3://inputs/data", "cfg.txt": "cfg.txt"}}
	if err := c.uploadMounts(ctx, r, task, base); err != nil {
		t.Fatalf("upload file_mounts: %v; want the bucket left to the sync program", err)
	}
	got, err := os.ReadFile(filepath.Join(r.Dir(), "workdir", "cfg.txt"))
	if err != nil || string(got) != "cfg\n" {
		t.Errorf("the local mount beside the bucket: %q, %v", got, err)
	}
}

// failingStart launches like fakeCloud, and its nodes answer but every
// command of the start fails there, as on a node whose disk is full.
type failingStart struct{ *fakeCloud }

func (failingStart) Placements(context.Context, schema.Resources) ([]schema.Placement, error) {
	return []schema.Placement{{Cloud: "local", Region: "local", Zone: "local-a"}}, nil
}

func (failingStart) Runner(context.Context, *provision.Cluster, int) (provision.Runner, error) {
	return answeringRunner{}, nil
}

type answeringRunner struct{}

func (answeringRunner) Exec(context.Context, string, io.Reader) ([]byte, error) {
	return nil, &provision.ExitError{Code: 1, Stderr: "mkdir: No space left on device"}
}
func (answeringRunner) Dir() string  { return "/nodes/0" }
func (answeringRunner) Close() error { return nil }

// A start the node answers and fails is retried a bounded number of
// times on the same cluster, then ends the job FAILED_PRECHECKS with the
// error: never "unreachable", never a free recovery on a new cluster.
func TestAFailingStartIsRetriedABoundedNumberOfTimes(t *testing.T) {
	ctx := context.Background()
	cloud := &fakeCloud{clusters: map[string]*provision.Cluster{}}
	c := newTestController(t, cloud)
	c.Config.Controller.UnreachableChecks = 3
	c.Providers = oneCloud{failingStart{cloud}}
	id := createJob(t, c, "resources: {cloud: local}\nrun: train\n")
	for tick := 1; tick <= 6; tick++ {
		if err := c.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		c.Wait()
		st, reason := jobStatus(t, c, id)
		if strings.Contains(reason, "unreachable") || strings.Contains(reason, "cannot reach") {
			t.Fatalf("tick %d: %s (%s); the node answered, so it is not unreachable", tick, st, reason)
		}
		if tick < 3 && (st.Terminal() || !strings.Contains(reason, "did not start on node 0 (try")) {
			t.Errorf("tick %d: %s (%s), want the start tried again", tick, st, reason)
		}
	}
	st, reason := jobStatus(t, c, id)
	if st != lifecycle.FailedPrechecks || !strings.Contains(reason, "did not start on node 0 in 3 tries") ||
		!strings.Contains(reason, "No space left on device") {
		t.Errorf("job %s (%s), want FAILED_PRECHECKS after 3 tries naming the error", st, reason)
	}
	if as, _ := c.Store.Attempts(ctx, id); len(as) != 1 {
		t.Errorf("%d attempts, want 1: no recovery", len(as))
	}
}

// A file_mounts source missing on this machine ends the job at once,
// FAILED_PRECHECKS naming the source, after one attempt and no recovery.
func TestAMissingFileMountSourceFailsPrechecks(t *testing.T) {
	c, _ := withLocalProvider(t)
	src := filepath.Join(t.TempDir(), "gone.txt")
	id := storeTask(t, c, &schema.Task{FileMounts: map[string]string{"/data/cfg.txt": src}, Run: "true"})
	j := launchAndStart(t, c, id)
	if j.Status != lifecycle.FailedPrechecks || !strings.Contains(j.FailureReason, src) {
		t.Errorf("job %s (%s), want FAILED_PRECHECKS naming %s", j.Status, j.FailureReason, src)
	}
	if as, _ := c.Store.Attempts(context.Background(), id); len(as) != 1 || j.RecoveryCount != 0 {
		t.Errorf("%d attempts, %d recoveries; want 1 and 0", len(as), j.RecoveryCount)
	}
}

// The upload itself tells a source missing here from a failure worth a
// retry: a missing source is a precheck error, whichever node.
func TestUploadOfAMissingSourceIsAPrecheckError(t *testing.T) {
	err := node.Upload(context.Background(), answeringRunner{}, filepath.Join(t.TempDir(), "gone"), "data")
	if err == nil || provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("upload of a missing source: %v (class %v), want a precheck error", err, provision.Classify(err))
	}
}
