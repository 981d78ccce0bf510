package controller

import (
	"context"

	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/schema"
)

// The tests drive a job's steps one at a time on a controller that is no
// replica: each writes through the controller's own store, checking no
// lease, as such a controller's steps do.

func (c *Controller) step(ctx context.Context, id int64) (bool, error) {
	return c.unleased().step(ctx, id)
}

func (c *Controller) reconcile(ctx context.Context, j *store.Job, a *store.Attempt, snap snapshot) error {
	return c.unleased().reconcile(ctx, j, a, snap)
}

func (c *Controller) observe(ctx context.Context, j *store.Job, p *schema.Pipeline, a *store.Attempt, snap snapshot) error {
	return c.unleased().observe(ctx, j, p, a, snap)
}

func (c *Controller) judge(ctx context.Context, j *store.Job, a *store.Attempt, prov provision.Provider, cl *provision.Cluster, sts []node.Status) error {
	return c.unleased().judge(ctx, j, a, prov, cl, sts)
}

func (c *Controller) startAttempt(ctx context.Context, j *store.Job, task *schema.Task, a *store.Attempt) error {
	return c.unleased().startAttempt(ctx, j, task, a)
}

func (c *Controller) endAttempt(ctx context.Context, j *store.Job, a *store.Attempt, e ended) error {
	return c.unleased().endAttempt(ctx, j, a, e)
}
