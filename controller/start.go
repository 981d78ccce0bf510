package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sortie/controller/clouds"
	"sortie/controller/home"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// startAttempt copies the workdir to every node and starts the node
// agent there. Both steps are idempotent, so a controller that died half
// way does them again safely.
func (c *jobStep) startAttempt(ctx context.Context, j *store.Job, task *schema.Task, a *store.Attempt) error {
	prov, cl, err := c.cluster(ctx, a)
	if err != nil {
		return err
	}
	if cl == nil || len(cl.Nodes) == 0 {
		return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost, reason: "cluster vanished before the task started"})
	}
	if e, ok := cloudEnded(cl, a); ok {
		return c.endAttempt(ctx, j, a, e)
	}
	c.requested(j.ID, a.TaskIdx)
	ips := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		ips[i] = n.IP
	}
	secrets, err := c.readSecrets(j.ID)
	if errors.Is(err, home.ErrUnreadable) {
		return c.failController(ctx, j, a, err)
	}
	if err != nil {
		return err
	}
	if old, err := c.waitForReplaced(ctx, a); err != nil || old != nil {
		if err != nil {
			return fmt.Errorf("read replaced attempts: %w", err)
		}
		// One task of a job runs at a time: the attempt whose node is under
		// a notice may still be writing its checkpoint.
		return c.Store.SetStatusReason(ctx, j.ID, fmt.Sprintf("cluster %s is up; the task starts once attempt %d's node, under a %s notice, has stopped",
			a.Cluster, old.Attempt, old.Notice.Kind))
	}
	if problem := c.missingInputs(j, task, secrets); problem != "" {
		// No retry can fix these: fail the job rather than start it wrong.
		return c.endLaunch(ctx, j, a, nil, true, problem)
	}
	if tr, ok := prov.(provision.TaskRunner); ok {
		return c.startTasks(ctx, tr, cl, j, task, a, secrets)
	}
	if problem, err := c.prepareBuckets(ctx, j, a, task); err != nil {
		return fmt.Errorf("prepare the buckets: %w", err)
	} else if problem != "" {
		return c.endLaunch(ctx, j, a, nil, true, problem)
	}
	for rank := range cl.Nodes {
		r, err := c.runner(ctx, prov, cl, rank, a)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if provision.Classify(err) == provision.ClassPrechecks {
				return c.endLaunch(ctx, j, a, nil, true, fmt.Sprintf("reach node %d: %v", rank, err))
			}
			// Reaching a node can fail for a while (booting, network); it
			// counts like a failed check of a running node.
			return c.unreachable(ctx, j, a, rank, fmt.Errorf("start the task: %w", err))
		}
		err = c.startNode(ctx, r, j, task, a, rank, ips, secrets)
		r.Close()
		var lacks *node.PrecheckError
		if errors.As(err, &lacks) {
			// The node lacks what the task needs (a container engine, git,
			// the repository's ref): no retry on it can help.
			return c.endLaunch(ctx, j, a, nil, true, fmt.Sprintf("node %d: %s", rank, lacks.Msg))
		}
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && provision.Classify(err) == provision.ClassPrechecks {
			// A start that fails the same way on every node and attempt
			// (a mount path no node can take, an env no process can
			// hold): recovering would loop forever.
			return c.endLaunch(ctx, j, a, nil, true, fmt.Sprintf("start the task on node %d: %v", rank, err))
		}
		var exit *provision.ExitError
		if err != nil && errors.As(err, &exit) {
			// The node answered and a step of the start failed there (a
			// full disk, a package mirror down): worth a few more tries
			// on this node, never a lost node.
			return c.startFailed(ctx, j, a, rank, err)
		}
		if err != nil {
			// Reaching a node can fail for a while (booting, network); it
			// counts like a failed check of a running node.
			return c.unreachable(ctx, j, a, rank, fmt.Errorf("start the task: %w", err))
		}
	}
	c.pause(PauseStarted, j.ID, a.Attempt)
	return c.Store.MarkRunning(ctx, a)
}

// startFailed counts a start the node answered and failed, against the
// same bound as checks of a node that does not answer
// (controller.unreachable_checks), one try a reconcile; at the bound the
// job ends FAILED_PRECHECKS with the error, rather than recovering on a
// new cluster where the same start fails the same way.
func (c *jobStep) startFailed(ctx context.Context, j *store.Job, a *store.Attempt, rank int, cause error) error {
	n := a.Unreachable + 1
	limit := c.Config.Controller.UnreachableChecks
	if n >= limit {
		return c.endLaunch(ctx, j, a, nil, true, fmt.Sprintf("the task did not start on node %d in %d tries: %v", rank, n, cause))
	}
	return c.Store.SetUnreachable(ctx, a, n, fmt.Sprintf("the task did not start on node %d (try %d/%d): %v; trying again", rank, n, limit, cause))
}

// missingInputs says what the task needs from this machine that is not
// there: a secret whose value was not kept, a workdir or file_mounts
// source that has gone since the launch.
func (c *Controller) missingInputs(j *store.Job, task *schema.Task, secrets map[string]string) string {
	for k := range task.Secrets {
		if _, ok := secrets[k]; !ok {
			return fmt.Sprintf("the value of secret %s was not kept at launch; launch the task again", k)
		}
	}
	paths := map[string]string{}
	if task.Workdir != "" {
		paths["workdir"] = task.Workdir
	}
	for dst, src := range task.FileMounts {
		if !schema.IsBucketURL(src) {
			paths["file_mounts."+dst] = src
		}
	}
	for dst, sm := range task.StorageMounts {
		for _, ls := range sm.LocalSources() {
			paths["file_mounts."+dst+"."+ls.Field] = ls.Path
		}
	}
	for field, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(j.BaseDir, p)
		}
		if tree, rel, ok := home.InUpload(c.Config.Home, p); ok {
			if !inUpload(tree, rel) {
				return fmt.Sprintf("%s: its upload is not on this server any more; launch the task again", field)
			}
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Sprintf("%s: %s is not there any more (%v)", field, p, err)
		}
	}
	return ""
}

func (c *Controller) startNode(ctx context.Context, r provision.Runner, j *store.Job, task *schema.Task, a *store.Attempt, rank int, ips []string, secrets map[string]string) error {
	st, err := node.Poll(ctx, r)
	if err != nil {
		return err
	}
	if st.Started {
		return nil
	}
	container, err := containerFor(ctx, r, task, attemptPlacement(a))
	if err != nil {
		return err
	}
	if repo := task.WorkdirRepo; repo != nil {
		if err := node.Clone(ctx, r, repo.URL, repo.Ref, "workdir"); err != nil {
			var lacks *node.PrecheckError
			if errors.As(err, &lacks) {
				return &node.PrecheckError{Msg: fmt.Sprintf("workdir %s at %q: %s", repo.URL, repo.Ref, lacks.Msg)}
			}
			return err
		}
	}
	if task.Workdir != "" {
		dir := task.Workdir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(j.BaseDir, dir)
		}
		if err := c.upload(ctx, r, dir, "workdir"); err != nil {
			return fmt.Errorf("upload workdir: %w", err)
		}
	}
	if err := c.uploadMounts(ctx, r, task, j.BaseDir); err != nil {
		return fmt.Errorf("upload file_mounts: %w", err)
	}
	env := taskEnv(j, task, a, secrets, len(ips))
	nodeIPs := strings.Join(ips, "\n")
	maps.Copy(env, map[string]string{
		"SORTIE_NODE_RANK": strconv.Itoa(rank), "SORTIE_NODE_IPS": nodeIPs,
		"SKYPILOT_NODE_RANK": strconv.Itoa(rank), "SKYPILOT_NODE_IPS": nodeIPs,
	})
	c.pause(PauseStarting, j.ID, a.Attempt)
	source, endpoint := c.noticeSource(a.Cloud)
	storage, fuse, storageEnv, err := c.storageSpec(task, a.Cloud, a.Region)
	if err != nil {
		return provision.Prechecks(fmt.Errorf("file_mounts: %w", err))
	}
	err = node.Start(ctx, r, node.StartSpec{Setup: task.Setup, Run: task.Run, Env: env, Container: container,
		NoticeSource: source, NoticeEndpoint: endpoint, TerminationGrace: task.Recovery().TerminationGrace.D(),
		Storage: storage, StorageEnv: storageEnv, FUSE: fuse, Mounts: absoluteMounts(task)})
	var lacks *node.PrecheckError
	if errors.As(err, &lacks) && len(fuse) > 0 {
		return &node.PrecheckError{Msg: "file_mounts: " + lacks.Msg}
	}
	return err
}

// absoluteMounts are task's absolute file_mounts destinations.
func absoluteMounts(task *schema.Task) []string {
	var out []string
	for dst := range task.FileMounts {
		if filepath.IsAbs(dst) {
			out = append(out, dst)
		}
	}
	sort.Strings(out)
	return out
}

// taskEnv is the environment of a's task the same on every one of its
// nodes: the task's envs and secrets, then sortie's values but each
// node's rank and the nodes' addresses.
func taskEnv(j *store.Job, task *schema.Task, a *store.Attempt, secrets map[string]string, nodes int) map[string]string {
	env := map[string]string{}
	maps.Copy(env, task.Envs)
	maps.Copy(env, secrets)
	taskID := fmt.Sprintf("sortie-%d-%d", j.ID, a.TaskIdx)
	maps.Copy(env, map[string]string{
		"SORTIE_JOB_ID": strconv.FormatInt(j.ID, 10), "SORTIE_TASK_ID": taskID,
		"SORTIE_ATTEMPT": strconv.Itoa(a.Attempt), "SORTIE_NUM_NODES": strconv.Itoa(nodes),
		"SKYPILOT_TASK_ID": taskID, "SKYPILOT_NUM_NODES": strconv.Itoa(nodes),
	})
	maps.Copy(env, sizeEnv(attemptResources(task, a)))
	return env
}

// containerFor is how the task's phases run in its container image
// (resources.image_id docker:IMAGE) on the node behind r, or nil when it
// has none. A node without a container engine is a node.PrecheckError.
func containerFor(ctx context.Context, r provision.Runner, task *schema.Task, at schema.Placement) (*node.Container, error) {
	image, ok := strings.CutPrefix(imageFor(task.Resources, at), "docker:")
	if !ok {
		return nil, nil
	}
	// A VM sortie launched boots a stock image, which may lack an engine:
	// it may install one there, never on this machine (local) or on
	// hollow nodes (sim).
	engine, err := node.ContainerEngine(ctx, r, clouds.Lookup(at.Cloud).Remote)
	var lacks *node.PrecheckError
	if errors.As(err, &lacks) {
		return nil, &node.PrecheckError{Msg: fmt.Sprintf("resources.image_id docker:%s: %s; start the engine, launch on an image that has docker or podman, or drop the docker: prefix to run on the node itself",
			image, lacks.Msg)}
	}
	if err != nil {
		return nil, err
	}
	// Relative destinations are under the workdir, which is in the node
	// directory the container always sees.
	var mounts []string
	for dst := range task.FileMounts {
		if filepath.IsAbs(dst) {
			mounts = append(mounts, dst)
		}
	}
	return &node.Container{Engine: engine, Image: image, Mounts: mounts}, nil
}

// imageFor is the image_id of the candidate placement at: the first of
// ordered/any_of whose cloud, region and zone match it and that names an
// image (per-region images become such candidates), else resources'.
func imageFor(r schema.Resources, at schema.Placement) string {
	for _, items := range [][]schema.Resources{r.Ordered, r.AnyOf} {
		for _, it := range items {
			if it.ImageID != "" && (it.Cloud == "" || it.Cloud == at.Cloud) &&
				(it.Region == "" || it.Region == at.Region) && (it.Zone == "" || it.Zone == at.Zone) {
				return it.ImageID
			}
		}
	}
	return r.ImageID
}

// runner reaches one node of a's cluster, in a directory of a's own: a
// restart on the same cluster never mixes its files with the last attempt's.
// It carries the node's key, derived from a's: the agent gets it at start
// and Poll takes no exit code the task wrote.
func (c *Controller) runner(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt) (provision.Runner, error) {
	r, err := prov.Runner(ctx, cl, rank)
	if err != nil {
		return nil, err
	}
	return node.ForAttemptKey(r, a.Attempt, node.NodeKey(a.NodeKey, rank)), nil
}

// uploadMounts copies each local file_mounts source to its destination on
// the node: an absolute path as given, ~/... in the node's HOME, a
// relative one under the task's workdir (where the task runs).
func (c *Controller) uploadMounts(ctx context.Context, r provision.Runner, task *schema.Task, baseDir string) error {
	dsts := slices.Sorted(maps.Keys(task.FileMounts))
	for _, dst := range dsts {
		src := task.FileMounts[dst]
		if schema.IsBucketURL(src) {
			// A bucket URL (s3://, gs://) is a bucket copied to dst by
			// the node's sync program, as the storage spec says.
			continue
		}
		if !filepath.IsAbs(src) {
			src = filepath.Join(baseDir, src)
		}
		// An absolute destination as given, ~/... in the node's HOME
		// (as SkyPilot has it), any other under the workdir.
		remote := dst
		if !filepath.IsAbs(remote) && !strings.HasPrefix(remote, "~/") {
			remote = filepath.Join("workdir", remote)
		}
		if err := c.upload(ctx, r, src, remote); err != nil {
			return fmt.Errorf("file_mounts %s: %w", dst, err)
		}
	}
	return nil
}

// upload copies src to remote on the node behind r. A source in one of
// a server's uploads is read through the upload's root, so that no link
// of the upload leads the copy outside it, and errors name it by its path
// in the upload; any other is the user's own disk, read as it is.
func (c *Controller) upload(ctx context.Context, r provision.Runner, src, remote string) error {
	tree, rel, ok := home.InUpload(c.Config.Home, src)
	if !ok {
		return node.Upload(ctx, r, src, remote)
	}
	root, err := os.OpenRoot(tree)
	if err != nil {
		c.Log.Error("open an upload", "path", tree, "err", err)
		return provision.Prechecks(errors.New("its upload is not on this server any more; launch the task again"))
	}
	defer root.Close()
	return node.UploadFrom(ctx, r, root, rel, remote)
}

// inUpload reports whether rel is there in the upload tree, through the
// tree's root.
func inUpload(tree, rel string) bool {
	root, err := os.OpenRoot(tree)
	if err != nil {
		return false
	}
	defer root.Close()
	_, err = root.Stat(rel)
	return err == nil
}
