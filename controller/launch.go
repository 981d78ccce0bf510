package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
	"sortie/strategy"
)

// launchAttempt finds a cluster for a: first one the controller may already
// have launched before a crash, else one placement after another in the
// strategy's order. Capacity errors move on; when every placement failed the
// job waits PENDING for the next round, or ends FAILED_NO_RESOURCE after the
// last; an error no retry can fix ends it FAILED_PRECHECKS at once.
func (c *Controller) launchAttempt(ctx context.Context, j *store.Job, p *schema.Pipeline, a *store.Attempt) error {
	select {
	case c.launch <- struct{}{}:
		defer func() { <-c.launch }()
	case <-ctx.Done():
		return ctx.Err()
	}
	task := p.Tasks[a.TaskIdx]
	if a.Cloud != "" {
		if adopted, err := c.adopt(ctx, a); err != nil || adopted {
			return err
		}
	}
	tasks, err := c.Store.Tasks(ctx, j.ID)
	if err != nil {
		return err
	}
	t := tasks[a.TaskIdx]
	cands, err := strategy.Candidates(task.Resources, func(r schema.Resources) ([]schema.Placement, error) {
		prov, err := c.Providers.Provider(ctx, r.Cloud)
		if err != nil {
			return nil, err
		}
		return prov.Placements(ctx, r)
	})
	if err == nil && len(cands) == 0 {
		err = fmt.Errorf("no placement satisfies the request")
	}
	if err != nil {
		return c.endLaunch(ctx, j, a, t, store.FailedPrechecks, fmt.Sprintf("no placement for %s: %v", task.Resources.Cloud, err))
	}
	var preempted *schema.Placement
	if t.PreemptedIn != "" {
		var pl schema.Placement
		if jsonUnmarshal(t.PreemptedIn, &pl) == nil {
			preempted = &pl
		}
	}
	rec := task.Recovery()
	var tries []strategy.LaunchTry
	for _, cand := range strategy.Order(rec.Strategy, cands, preempted, t.LaunchRound) {
		cl, err := c.launchAt(ctx, j, a, cand)
		if err == nil {
			return c.launched(ctx, j, task, a, cl)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		class := provision.Classify(err)
		tries = append(tries, strategy.LaunchTry{Placement: cand.Placement, Class: string(class), Message: err.Error()})
		if rerr := c.Store.RecordLaunchTry(ctx, store.LaunchTry{JobID: j.ID, TaskIdx: a.TaskIdx, Attempt: a.Attempt, Round: t.LaunchRound,
			Cloud: cand.Placement.Cloud, Region: cand.Placement.Region, Zone: cand.Placement.Zone, Class: string(class), Message: err.Error()}); rerr != nil {
			return rerr
		}
		if class == provision.ClassPrechecks {
			return c.endLaunch(ctx, j, a, t, store.FailedPrechecks, fmt.Sprintf("launch in %s: %v", cand.Placement, err))
		}
	}
	round := t.LaunchRound + 1
	if round >= c.Config.Controller.LaunchRounds {
		return c.endLaunch(ctx, j, a, t, store.FailedNoResource, strategy.NoResourceReason(tries, round))
	}
	wait := c.Config.LaunchBackoff().Delay(round, c.Rand)
	next := c.Now().Add(wait)
	err = c.Store.SetWaiting(ctx, j.ID, a.TaskIdx, store.Pending, strategy.BackingOffReason(tries, wait), &next, round)
	if errors.Is(err, store.ErrTerminal) {
		return nil
	}
	return err
}

// launchAt launches a's cluster at one candidate placement, recording the
// placement first so that a restarted controller looks for it there.
func (c *Controller) launchAt(ctx context.Context, j *store.Job, a *store.Attempt, cand strategy.Candidate) (*provision.Cluster, error) {
	pl := cand.Placement
	prov, err := c.Providers.Provider(ctx, pl.Cloud)
	if err != nil {
		return nil, provision.Prechecks(err)
	}
	if err := c.Store.SetPlacement(ctx, a.ID, pl.Cloud, pl.Region, pl.Zone); err != nil {
		return nil, err
	}
	a.Cloud, a.Region, a.Zone = pl.Cloud, pl.Region, pl.Zone
	p, err := spec(j)
	if err != nil {
		return nil, err
	}
	n := p.Tasks[a.TaskIdx].NumNodes
	if n < 1 {
		n = 1
	}
	return prov.Launch(ctx, provision.ClusterSpec{
		Name: a.Cluster, Placement: pl, NumNodes: n, Resources: cand.Resources,
		Tags: map[string]string{
			provision.TagManaged: "true", provision.TagCluster: a.Cluster,
			provision.TagJob: strconv.FormatInt(j.ID, 10), provision.TagTask: strconv.Itoa(a.TaskIdx),
			provision.TagAttempt: strconv.Itoa(a.Attempt),
		},
	})
}

// adopt finds a cluster launched for a before a controller restart.
func (c *Controller) adopt(ctx context.Context, a *store.Attempt) (bool, error) {
	prov, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return false, nil
	}
	got, err := prov.Status(ctx, []string{a.Cluster})
	if err != nil {
		return false, fmt.Errorf("look for %s: %w", a.Cluster, err)
	}
	cl := got[a.Cluster]
	if cl == nil || len(cl.Nodes) == 0 {
		return false, nil
	}
	for _, n := range cl.Nodes {
		if n.State != provision.NodeRunning {
			// Half there: clear it and launch afresh.
			return false, prov.Terminate(ctx, a.Cluster)
		}
	}
	return true, c.Store.MarkLaunched(ctx, a.ID, cl.Placement.Cloud, cl.Placement.Region, cl.Placement.Zone, instanceIDs(cl))
}

func (c *Controller) launched(ctx context.Context, j *store.Job, task *schema.Task, a *store.Attempt, cl *provision.Cluster) error {
	pl := cl.Placement
	if pl.Cloud == "" {
		pl = attemptPlacement(a)
	}
	if err := c.Store.MarkLaunched(ctx, a.ID, pl.Cloud, pl.Region, pl.Zone, instanceIDs(cl)); err != nil {
		return err
	}
	a.State = store.AttemptStarting
	return c.startAttempt(ctx, j, task, a)
}

// endLaunch ends an attempt that never got a cluster, and its job.
func (c *Controller) endLaunch(ctx context.Context, j *store.Job, a *store.Attempt, t *store.Task, status, reason string) error {
	c.terminate(ctx, a)
	err := c.Store.EndAttempt(ctx, store.End{
		Attempt: a, Outcome: string(strategy.LaunchFailed), Reason: reason,
		Action: string(strategy.Fail), Decision: reason,
		RecoveryCount: t.RecoveryCount, RestartsOnErrors: t.RestartsOnErrors,
		TaskStatus: status, JobStatus: status, FailureReason: reason,
	})
	if err != nil {
		return err
	}
	c.cleanupSecrets(j.ID)
	return nil
}

func instanceIDs(cl *provision.Cluster) []string {
	ids := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		ids[i] = n.InstanceID
	}
	return ids
}

// startAttempt copies the workdir to every node and starts the task's
// wrapper there. Both steps are idempotent, so a controller that died half
// way does them again safely.
func (c *Controller) startAttempt(ctx context.Context, j *store.Job, task *schema.Task, a *store.Attempt) error {
	prov, err := c.Providers.Provider(ctx, a.Cloud)
	if err != nil {
		return err
	}
	got, err := prov.Status(ctx, []string{a.Cluster})
	if err != nil {
		return fmt.Errorf("status of %s: %w", a.Cluster, err)
	}
	cl := got[a.Cluster]
	if cl == nil || len(cl.Nodes) == 0 {
		return c.endAttempt(ctx, j, a, ended{outcome: strategy.NodeLost, reason: "cluster vanished before the task started"})
	}
	if e, ok := cloudEnded(cl, a); ok {
		return c.endAttempt(ctx, j, a, e)
	}
	ips := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		ips[i] = n.IP
	}
	secrets, err := c.readSecrets(j.ID)
	if err != nil {
		return err
	}
	if problem := c.missingInputs(j, task, secrets); problem != "" {
		// No retry can fix these: fail the job rather than start it wrong.
		tasks, err := c.Store.Tasks(ctx, j.ID)
		if err != nil {
			return err
		}
		return c.endLaunch(ctx, j, a, tasks[a.TaskIdx], store.FailedPrechecks, problem)
	}
	for rank := range cl.Nodes {
		r, err := c.runner(ctx, prov, cl, rank, a)
		if err == nil {
			err = c.startNode(ctx, r, j, task, a, rank, ips, secrets)
			r.Close()
		}
		if err != nil {
			// Reaching a node can fail for a while (booting, network); it
			// counts like a failed check of a running node.
			return c.unreachable(ctx, j, a, rank, fmt.Errorf("start the task: %w", err))
		}
	}
	return c.Store.MarkRunning(ctx, a)
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
		paths["file_mounts."+dst] = src
	}
	for field, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(j.BaseDir, p)
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
	if task.Workdir != "" {
		dir := task.Workdir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(j.BaseDir, dir)
		}
		if err := node.Upload(ctx, r, dir, "workdir"); err != nil {
			return fmt.Errorf("upload workdir %s: %w", dir, err)
		}
	}
	if err := uploadMounts(ctx, r, task, j.BaseDir); err != nil {
		return err
	}
	env := map[string]string{}
	for k, v := range task.Envs {
		env[k] = v
	}
	for k, v := range secrets {
		env[k] = v
	}
	taskID := fmt.Sprintf("sortie-%d-%d", j.ID, a.TaskIdx)
	nodeIPs := strings.Join(ips, "\n")
	for k, v := range map[string]string{
		"SORTIE_JOB_ID": strconv.FormatInt(j.ID, 10), "SORTIE_TASK_ID": taskID,
		"SORTIE_ATTEMPT": strconv.Itoa(a.Attempt), "SORTIE_NODE_RANK": strconv.Itoa(rank),
		"SORTIE_NUM_NODES": strconv.Itoa(len(ips)), "SORTIE_NODE_IPS": nodeIPs,
		"SKYPILOT_TASK_ID": taskID, "SKYPILOT_NODE_RANK": strconv.Itoa(rank),
		"SKYPILOT_NUM_NODES": strconv.Itoa(len(ips)), "SKYPILOT_NODE_IPS": nodeIPs,
	} {
		env[k] = v
	}
	return node.Start(ctx, r, node.StartSpec{Setup: task.Setup, Run: task.Run, Env: env})
}

// runner reaches one node of a's cluster, in a directory of a's own: a
// restart on the same cluster never mixes its files with the last attempt's.
func (c *Controller) runner(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt) (provision.Runner, error) {
	return nodeRunner(ctx, prov, cl, rank, a)
}

func nodeRunner(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt) (provision.Runner, error) {
	r, err := prov.Runner(ctx, cl, rank)
	if err != nil {
		return nil, err
	}
	return attemptRunner{Runner: r, dir: r.Dir() + "/attempt-" + strconv.Itoa(a.Attempt)}, nil
}

// NodeCallTimeout bounds one command on a node. A connection that dies
// without closing would otherwise hold its job's reconcile forever; a call
// that times out counts as a failed check of the node.
const NodeCallTimeout = 5 * time.Minute

type attemptRunner struct {
	provision.Runner
	dir string
}

func (r attemptRunner) Dir() string { return r.dir }

func (r attemptRunner) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, NodeCallTimeout)
	defer cancel()
	return r.Runner.Exec(ctx, script, stdin)
}

// uploadMounts copies each local file_mounts source to its destination on
// the node: an absolute path as given, a relative one under the task's
// workdir (where the task runs).
func uploadMounts(ctx context.Context, r provision.Runner, task *schema.Task, baseDir string) error {
	dsts := make([]string, 0, len(task.FileMounts))
	for dst := range task.FileMounts {
		dsts = append(dsts, dst)
	}
	sort.Strings(dsts)
	for _, dst := range dsts {
		src := task.FileMounts[dst]
		if !filepath.IsAbs(src) {
			src = filepath.Join(baseDir, src)
		}
		remote := dst
		if !filepath.IsAbs(remote) {
			remote = filepath.Join("workdir", remote)
		}
		if err := node.Upload(ctx, r, src, remote); err != nil {
			return fmt.Errorf("file_mounts %s: %w", dst, err)
		}
	}
	return nil
}
