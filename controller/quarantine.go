package controller

import (
	"context"

	"sortie/controller/store"
	"sortie/strategy"
)

// setAside orders the candidates on quarantined zones, or asking for a
// quarantined instance type there, last (never leaving them out) and
// records, for the job's launch tries, why each was: "local/local/local-a
// set aside until 14:32 UTC: 3 jobs lost their node there"; a quarantined
// Kubernetes node of a candidate's cluster is recorded the same way, and
// the launch there asks to place the pods on it last (strategy.AvoidHosts
// of the quarantines returned). A store that cannot say what is
// quarantined leaves the order as it is: quarantine is advice, not a
// reason to stop launching.
func (c *jobStep) setAside(ctx context.Context, a *store.Attempt, round int, order []strategy.Candidate) ([]strategy.Candidate, []strategy.Quarantined, error) {
	qs, err := c.Store.Quarantined(ctx, c.Config.QuarantinePolicy())
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		c.logger(ctx).Warn("read the quarantined placements; launching in the strategy's order", "err", err)
		return order, nil, nil
	}
	order, why := strategy.SetAside(order, qs)
	for _, q := range why {
		pl := q.Placement
		if err := c.Store.RecordLaunchTry(ctx, store.LaunchTry{JobID: a.JobID, TaskIdx: a.TaskIdx, Attempt: a.Attempt, Round: round,
			Cloud: pl.Cloud, Region: pl.Region, Zone: pl.Zone, Class: strategy.ClassSetAside, Message: q.Reason()}); err != nil {
			return nil, nil, err
		}
	}
	return order, qs, nil
}
