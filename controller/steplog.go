package controller

import (
	"context"
	"log/slog"

	"sortie/controller/store"
	"sortie/provision"
)

// withStep returns ctx carrying the logger of a step of job j on attempt
// a (nil before there is one): c.Log with the fields job, task, and, as
// they become known, attempt and cloud. Everything the step logs carries
// them, so that a job's lines can be picked out of the controller's log;
// the providers it calls log through it too (provision.Logger).
func (c *Controller) withStep(ctx context.Context, j *store.Job, a *store.Attempt) context.Context {
	args := []any{"job", j.ID}
	cloud := ""
	if a != nil {
		args = append(args, "task", a.TaskIdx, "attempt", a.Attempt)
		if a.Cloud != "" {
			cloud = a.Cloud
			args = append(args, "cloud", cloud)
		}
	} else {
		args = append(args, "task", j.CurrentTask)
	}
	return provision.WithLogger(ctx, c.Log.With(args...), cloud)
}

// logger is the logger of the step ctx belongs to, else the controller's.
func (c *Controller) logger(ctx context.Context) *slog.Logger {
	return provision.Logger(ctx, c.Log, "")
}
