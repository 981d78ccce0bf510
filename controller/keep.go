package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"sortie/controller/home"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
)

// keepLogs copies the log of every node of a that the cloud reports
// running, or whose log it says can still be read (a node going, or gone,
// whose log the provider read in time: provision.Node.LogReadable), into
// the controller's log directory, all nodes at once; a node must answer,
// and send each chunk, within the controller's LogDeadline, and a node
// going within its task's termination grace more: what the task writes
// after its SIGTERM (a checkpoint) is what matters most. Any other node
// the cloud reports gone is never dialled. Where a node's log is not kept
// (and no earlier copy is), a note beside it says why, which `jobs logs`
// prints.
func (c *Controller) keepLogs(ctx context.Context, j *store.Job, a *store.Attempt, prov provision.Provider, cl *provision.Cluster) {
	var wg sync.WaitGroup
	for rank, n := range cl.Nodes {
		if n.State != provision.NodeRunning && !n.LogReadable {
			c.logNotKept(j, a, rank, fmt.Sprintf("node %d was %s when the attempt ended%s", rank, n.State, because(n.Reason)))
			continue
		}
		per := c.logDeadline()
		if n.State != provision.NodeRunning {
			per += c.terminationGrace(j, a.TaskIdx)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nt, err := c.reach(ctx, prov, cl, rank, a)
			if err == nil {
				err = copyLog(ctx, nt, home.NodeLog(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank), per, c.logLimit(len(cl.Nodes)))
				nt.Close()
			}
			if err != nil {
				c.logger(ctx).Warn("keep node log", "cluster", a.Cluster, "rank", rank, "err", err)
				why := fmt.Sprintf("node %d could not be read when the attempt ended: %v", rank, err)
				if n.State != provision.NodeRunning {
					why = fmt.Sprintf("node %d was %s when the attempt ended%s, and its log could not be read: %v", rank, n.State, because(n.Reason), err)
				}
				c.logNotKept(j, a, rank, why)
				return
			}
			os.Remove(home.NodeLogMissing(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank))
		}()
	}
	wg.Wait()
}

// logNotKept notes why node rank's log of a was not kept, unless an
// earlier copy of it is (in this layout or, kept by an earlier version,
// the old one).
func (c *Controller) logNotKept(j *store.Job, a *store.Attempt, rank int, reason string) {
	if _, ok := home.KeptNodeLog(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank); ok {
		return
	}
	path := home.NodeLogMissing(c.Config.Home, j.ID, a.TaskIdx, a.Attempt, rank)
	if err := os.WriteFile(path, []byte(reason+"\n"), 0o644); err != nil {
		c.Log.Warn("note a log not kept", "path", path, "err", err)
	}
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

// defaultLogDeadline bounds reading one node when an attempt ends.
const defaultLogDeadline = 20 * time.Second

func (c *Controller) logDeadline() time.Duration {
	if c.LogDeadline > 0 {
		return c.LogDeadline
	}
	return defaultLogDeadline
}

// reach is nodeTask within the LogDeadline: a node that does not answer
// in that time is given up.
func (c *Controller) reach(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt) (node.Task, error) {
	dctx, cancel := context.WithTimeout(ctx, c.logDeadline())
	defer cancel()
	return c.nodeTask(dctx, prov, cl, rank, a)
}

// nodeTask reaches node rank's task of a's cluster: through the provider
// when its nodes run the task themselves (provision.TaskRunner), else
// through the node agent in a's own directory (as runner).
func (c *Controller) nodeTask(ctx context.Context, prov provision.Provider, cl *provision.Cluster, rank int, a *store.Attempt) (node.Task, error) {
	return node.TaskOfKey(ctx, prov, cl, rank, a.Attempt, a.NodeKey)
}

// keepLog keeps node task nt's log at path, for an attempt of nodes
// nodes, by reading it through the node (copyLog).
func (c *Controller) keepLog(ctx context.Context, nt node.Task, path string, nodes int) error {
	return copyLog(ctx, nt, path, c.logDeadline(), c.logLimit(nodes))
}

// copyLog copies a node's log to path chunk by chunk, so a large log never
// sits in memory whole; the file appears complete or not at all. Each chunk
// must come within per (when positive): a node that stops answering is
// given up, one sending a long log is not. Past limit bytes (when
// positive) the first and last halves are kept (cappedLog).
func copyLog(ctx context.Context, nt node.Task, path string, per time.Duration, limit int64) error {
	tmp := path + ".tmp"
	// Removed first, not truncated: a temporary name that an earlier
	// version, stopped half way, left linked to a local node's log names
	// that log.
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, home.FileMode)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	w := newCappedLog(f, limit)
	var off int64
	for {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if per > 0 {
			cctx, cancel = context.WithTimeout(ctx, per)
		}
		b, err := nt.ReadLog(cctx, off)
		cancel()
		if err != nil {
			f.Close()
			return err
		}
		if _, err := w.Write(b); err != nil {
			w.finish()
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
	if err := w.finish(); err != nil {
		f.Close()
		return err
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
