package controller

import (
	"context"
	"os"

	"sortie/controller/home"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
)

// keepLogs copies every reachable node's log of a into the controller's
// log directory. A node it cannot reach keeps whatever was copied before.
func (c *Controller) keepLogs(ctx context.Context, j *store.Job, a *store.Attempt, prov provision.Provider, cl *provision.Cluster) {
	for rank := range cl.Nodes {
		r, err := c.runner(ctx, prov, cl, rank, a)
		if err != nil {
			continue
		}
		err = keepLog(ctx, r, home.NodeLog(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank))
		r.Close()
		if err != nil {
			c.Log.Warn("keep node log", "cluster", a.Cluster, "rank", rank, "err", err)
		}
	}
}

// keepLog copies a node's log to path chunk by chunk, so a large log never
// sits in memory whole; the file appears complete or not at all.
func keepLog(ctx context.Context, r provision.Runner, path string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, home.FileMode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	var off int64
	for {
		b, err := node.ReadLog(ctx, r, off)
		if err != nil {
			f.Close()
			return err
		}
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		off += int64(len(b))
		// A chunk shorter than the most ReadLog returns is the end: the
		// task has ended, so its log does not grow, and asking the node
		// once more (a process, or an SSH round trip) would only confirm it.
		if len(b) < node.MaxLogChunk {
			break
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (c *Controller) readSecrets(job int64) (map[string]string, error) {
	return home.ReadSecrets(c.Config.Home, job)
}

func (c *Controller) cleanupSecrets(job int64) {
	if err := home.RemoveSecrets(c.Config.Home, job); err != nil {
		c.Log.Warn("remove secrets", "job", job, "err", err)
	}
}
