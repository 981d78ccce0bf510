package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"sortie/controller/clouds"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
)

// startTasks starts a's task on a cluster whose nodes run it themselves
// (provision.TaskRunner: Kubernetes pods): the provider hands the scripts,
// the environment and the task's files to every node at once. What such a
// node cannot do (buckets, a git workdir, files past the provider's limit)
// ends the job FAILED_PRECHECKS, naming the field.
func (c *jobStep) startTasks(ctx context.Context, tr provision.TaskRunner, cl *provision.Cluster, j *store.Job, task *schema.Task, a *store.Attempt, secrets map[string]string) error {
	cloud := a.Cloud
	if problem := unsupportedOn(task, cloud); problem != "" {
		return c.endLaunch(ctx, j, a, nil, true, problem)
	}
	files, err := taskFiles(task, j.BaseDir, tr.FilesLimit(), cloud)
	var tooLarge *node.FilesTooLarge
	if errors.As(err, &tooLarge) || provision.Classify(err) == provision.ClassPrechecks {
		return c.endLaunch(ctx, j, a, nil, true, err.Error())
	}
	if err != nil {
		return fmt.Errorf("read the task's files: %w", err)
	}
	c.pause(PauseStarting, j.ID, a.Attempt)
	err = tr.StartTask(ctx, cl, provision.Task{Setup: task.Setup, Run: task.Run,
		Env: taskEnv(j, task, a, secrets, len(cl.Nodes)), Files: files})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && provision.Classify(err) == provision.ClassPrechecks {
		return c.endLaunch(ctx, j, a, nil, true, fmt.Sprintf("start the task: %v", err))
	}
	if err != nil {
		return c.unreachable(ctx, j, a, 0, fmt.Errorf("start the task: %w", err))
	}
	c.pause(PauseStarted, j.ID, a.Attempt)
	return c.Store.MarkRunning(ctx, a)
}

// unsupportedOn says what of task a cloud whose nodes run the task
// themselves cannot do: no agent is there to sync buckets or clone a
// repository.
func unsupportedOn(task *schema.Task, cloud string) string {
	if mounts, _ := task.Buckets("", clouds.Schema()); len(mounts) > 0 {
		return fmt.Sprintf("file_mounts.%s: buckets are not mounted on %s (its nodes run the task as their own command, with no sortie agent to sync them); copy the data in the task's setup, or run on another cloud", mounts[0].Path, cloud)
	}
	if task.WorkdirRepo != nil {
		return fmt.Sprintf("workdir: a git repository (%s) is not cloned on %s; clone it in the task's setup, or give a local workdir", task.WorkdirRepo.URL, cloud)
	}
	return ""
}

// taskFiles reads the task's workdir and local file_mounts sources as the
// files handed to its nodes, at most limit bytes in all: the workdir's
// files under the directory the task runs in, a mount at its destination
// (a relative one under that directory).
func taskFiles(task *schema.Task, baseDir string, limit int64, cloud string) ([]provision.File, error) {
	local := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(baseDir, p)
	}
	if (task.Workdir != "" || len(task.FileMounts) > 0) && limit <= 0 {
		return nil, provision.Prechecks(fmt.Errorf("workdir and file_mounts: %s takes no files with the task; remove them, or run on another cloud", cloud))
	}
	var used int64
	var out []provision.File
	if task.Workdir != "" {
		fs, err := node.Files(local(task.Workdir), "", "workdir", &used, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	dsts := slices.Sorted(maps.Keys(task.FileMounts))
	for _, dst := range dsts {
		if schema.IsBucketURL(task.FileMounts[dst]) {
			continue // a bucket, not a file handed to the nodes
		}
		fs, err := node.Files(local(task.FileMounts[dst]), dst, "file_mounts."+dst, &used, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}
