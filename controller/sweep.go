package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"sortie/controller/home"
	"sortie/provision"
)

// SweepOrphans terminates clusters tagged by sortie that belong to no open
// attempt: left by a controller killed between deciding and tearing down.
//
// A cluster kept after a failure (keep_on_failure) is not an orphan before
// its time, unless a user asked to release it; from then on it is one,
// and ReleaseKept, which runs first, records it released.
func (c *Controller) SweepOrphans(ctx context.Context) error {
	if err := c.ReleaseKept(ctx); err != nil {
		c.Log.Warn("release kept clusters", "err", err)
	}
	used, err := c.Store.Clouds(ctx)
	if err != nil {
		return fmt.Errorf("list the clouds in use: %w", err)
	}
	clouds := map[string]bool{}
	for _, cl := range append(c.Providers.Opened(), used...) {
		clouds[cl] = true
	}
	for cloud := range clouds {
		p, err := c.Providers.Provider(ctx, cloud)
		if err != nil {
			continue
		}
		cls, err := p.List(ctx)
		if err != nil {
			c.Log.Warn("list clusters", "cloud", cloud, "err", err)
			continue
		}
		// Which clusters are owned is read after listing them: an attempt
		// is stored before its cluster is launched, so a cluster the list
		// saw has its owner in this read, even while jobs run.
		live, err := c.Store.LiveClusters(ctx, c.Now())
		if err != nil {
			return fmt.Errorf("list live clusters: %w", err)
		}
		for _, cl := range cls {
			if live[cl.Name] || allTerminated(cl) {
				continue
			}
			c.Log.Info("terminating orphan cluster", "cloud", cloud, "cluster", cl.Name)
			if err := p.Terminate(ctx, cl.Name); err != nil {
				c.Log.Warn("terminate orphan", "cluster", cl.Name, "err", err)
			}
		}
	}
	return nil
}

func allTerminated(cl *provision.Cluster) bool {
	return !slices.ContainsFunc(cl.Nodes, func(n provision.Node) bool { return n.State != provision.NodeTerminated })
}

// removeStaleSecrets removes the kept secrets of jobs that have ended, in
// case a controller died between ending a job and removing them.
func (c *Controller) removeStaleSecrets(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(home.SecretsDir(c.Config.Home), "*.json"))
	for _, f := range files {
		id, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(f), ".json"), 10, 64)
		if err != nil {
			continue
		}
		if j, err := c.Store.Job(ctx, id); err == nil && j.Status.Terminal() {
			c.cleanupSecrets(id)
		}
	}
}
