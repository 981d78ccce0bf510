package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"sortie/controller/clouds"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/schema"
	"sortie/strategy"
)

// launchAttempt finds a cluster for a: first one the controller may already
// have launched before a crash, else one placement after another in the
// strategy's order. Capacity errors move on; when every placement failed the
// job waits PENDING for the next round, or ends FAILED_NO_RESOURCE after the
// last; an error no retry can fix ends it FAILED_PRECHECKS at once.
func (c *jobStep) launchAttempt(ctx context.Context, j *store.Job, p *schema.Pipeline, a *store.Attempt) error {
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
		return fmt.Errorf("read tasks: %w", err)
	}
	t := tasks[a.TaskIdx]
	// A cloud that is not enabled on this machine offers nothing, as the
	// launch left it out; when every cloud the task allows is, the job
	// ends saying why of each.
	enabled, _ := c.Providers.(interface {
		Enabled(cloud string, m clouds.Machine) error
	})
	var disabled []string
	cands, err := strategy.Candidates(attemptResources(task, a), func(r schema.Resources) ([]schema.Placement, error) {
		if enabled != nil {
			if err := enabled.Enabled(r.Cloud, clouds.Machine{}); err != nil {
				if !slices.Contains(disabled, err.Error()) {
					disabled = append(disabled, err.Error())
				}
				return nil, nil
			}
		}
		prov, err := c.Providers.Provider(ctx, r.Cloud)
		if err != nil {
			return nil, err
		}
		return prov.Placements(ctx, r)
	})
	if se := (*provision.StateError)(nil); errors.As(err, &se) {
		return c.failController(ctx, j, a, err)
	}
	if errors.Is(err, strategy.ErrNoCandidates) && len(disabled) > 0 {
		return c.endLaunch(ctx, j, a, p, true, "no cloud the task allows is enabled on the controller's machine: "+strings.Join(disabled, "; ")+
			" (`sortie check` says what each cloud lacks)")
	}
	if err != nil {
		// Candidates' error names the request and what to check; when it
		// finds nothing it says so itself (strategy.ErrNoCandidates).
		return c.endLaunch(ctx, j, a, p, true, err.Error())
	}
	var preempted *schema.Placement
	if t.PreemptedIn != "" {
		var pl schema.Placement
		if jsonUnmarshal(t.PreemptedIn, &pl) == nil {
			preempted = &pl
		}
	}
	cands = c.avoidPreempted(ctx, c.placeCheaper(task, cands, c.Now()))
	rec := task.Recovery()
	var tries []strategy.LaunchTry
	// A confirming run goes elsewhere first; placements set aside go last.
	order, err := c.confirmOrder(ctx, task, a, cands, strategy.Order(rec.Strategy, cands, preempted, t.LaunchRound))
	if err != nil {
		return err
	}
	order, qs, err := c.setAside(ctx, a, t.LaunchRound, order)
	if err != nil {
		return err
	}
	for _, cand := range order {
		pl := cand.Placement
		if q, known := c.priceAt(candidateKey(cand), c.Now()); known {
			if why, over := strategy.OverHourlyCost(cand.Resources, q.PerHour, known); over {
				// Skipped, not tried: the reason is shown with the tries.
				tries = append(tries, strategy.LaunchTry{Placement: pl, Class: strategy.ClassOverHourlyCost, Message: why})
				if err := c.Store.RecordLaunchTry(ctx, store.LaunchTry{JobID: j.ID, TaskIdx: a.TaskIdx, Attempt: a.Attempt, Round: t.LaunchRound,
					Cloud: pl.Cloud, Region: pl.Region, Zone: pl.Zone, Class: strategy.ClassOverHourlyCost, Message: why}); err != nil {
					return err
				}
				continue
			}
			if why, over := c.overBudgetAt(j, task, a, q.PerHour); over {
				return c.stopOverBudget(ctx, j, a, why)
			}
		}
		c.Metrics.LaunchTries.WithLabelValues(pl.Cloud, pl.Region).Inc()
		cl, err := c.launchAt(ctx, j, a, cand, strategy.AvoidHosts(cand, qs))
		if err == nil {
			return c.launched(ctx, j, task, a, cl)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if se := (*provision.StateError)(nil); errors.As(err, &se) {
			return c.failController(ctx, j, a, err)
		}
		class := provision.Classify(err)
		c.Metrics.LaunchFailures.WithLabelValues(pl.Cloud, pl.Region, string(class)).Inc()
		tries = append(tries, strategy.LaunchTry{Placement: cand.Placement, Class: string(class), Message: err.Error()})
		if rerr := c.Store.RecordLaunchTry(ctx, store.LaunchTry{JobID: j.ID, TaskIdx: a.TaskIdx, Attempt: a.Attempt, Round: t.LaunchRound,
			Cloud: cand.Placement.Cloud, Region: cand.Placement.Region, Zone: cand.Placement.Zone, Class: string(class), Message: err.Error()}); rerr != nil {
			return rerr
		}
		if class == provision.ClassPrechecks {
			return c.endLaunch(ctx, j, a, p, true, fmt.Sprintf("launch in %s: %v", cand.Placement, err))
		}
	}
	round := t.LaunchRound + 1
	if round >= c.Config.Controller.LaunchRounds {
		return c.endLaunch(ctx, j, a, p, false, strategy.NoResourceReason(tries, round))
	}
	wait := c.Config.LaunchBackoff().Delay(round, c.Rand)
	next := c.Now().Add(wait)
	err = c.Store.SetWaiting(ctx, j.ID, a.TaskIdx, strategy.BackingOffReason(tries, wait), &next, round)
	if errors.Is(err, store.ErrTerminal) || errors.Is(err, store.ErrCancelRequested) {
		return nil // ended or being cancelled meanwhile: the next look sees it as it is
	}
	return wrapf(err, "wait for capacity")
}

// launchAt launches a's cluster at one candidate placement, recording the
// placement first so that a restarted controller looks for it there. The
// provider places the nodes on the avoid hosts last (quarantined
// Kubernetes nodes).
func (c *jobStep) launchAt(ctx context.Context, j *store.Job, a *store.Attempt, cand strategy.Candidate, avoid []string) (*provision.Cluster, error) {
	pl := cand.Placement
	prov, err := c.Providers.Provider(ctx, pl.Cloud)
	if err != nil {
		return nil, provision.Prechecks(err)
	}
	p, err := c.spec(j)
	if err != nil {
		return nil, err
	}
	n := max(p.Tasks[a.TaskIdx].NumNodes, 1)
	// Billed from the request: the one of the launch that succeeds is kept.
	b := c.billing(cand, n)
	if err := c.Store.SetPlacement(ctx, a.ID, pl.Cloud, pl.Region, pl.Zone, cand.Resources.InstanceType, b); err != nil {
		return nil, fmt.Errorf("record placement %s: %w", pl, err)
	}
	a.Cloud, a.Region, a.Zone, a.InstanceType, a.Host, a.Billing = pl.Cloud, pl.Region, pl.Zone, cand.Resources.InstanceType, "", b
	ctx = c.withStep(ctx, j, a)
	// What the launch waits for is shown on the job while it waits, and
	// cleared once it is over.
	var shown atomic.Bool
	pctx := provision.WithProgress(ctx, func(msg string) {
		shown.Store(true)
		if err := c.Store.SetStatusReason(ctx, j.ID, msg); err != nil && ctx.Err() == nil {
			c.logger(ctx).Warn("show launch progress", "err", err)
		}
	})
	defer func() {
		if shown.Load() {
			if err := c.Store.SetStatusReason(ctx, j.ID, ""); err != nil && ctx.Err() == nil {
				c.logger(ctx).Warn("clear launch progress", "err", err)
			}
		}
	}()
	c.requested(j.ID, a.TaskIdx)
	buckets, _ := p.Tasks[a.TaskIdx].Buckets("", clouds.Schema())
	return prov.Launch(pctx, provision.ClusterSpec{
		Name: a.Cluster, Placement: pl, NumNodes: n, Resources: cand.Resources, Buckets: len(buckets) > 0, AvoidHosts: avoid,
		Tags: map[string]string{
			provision.TagManaged: "true", provision.TagCluster: a.Cluster,
			provision.TagJob: strconv.FormatInt(j.ID, 10), provision.TagTask: strconv.Itoa(a.TaskIdx),
			provision.TagAttempt: strconv.Itoa(a.Attempt),
		},
	})
}

// adopt finds a cluster launched for a before a controller restart.
func (c *jobStep) adopt(ctx context.Context, a *store.Attempt) (bool, error) {
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
	if err := c.Store.MarkLaunched(ctx, a.ID, cl.Placement.Cloud, cl.Placement.Region, cl.Placement.Zone, instanceIDs(cl)); err != nil {
		return true, err
	}
	return true, c.recordHost(ctx, a, cl)
}

// recordHost records the one shared machine every node of cl runs on (a
// Kubernetes node), which quarantine counts a failure against; nothing
// when the nodes are VMs or on several machines.
func (c *jobStep) recordHost(ctx context.Context, a *store.Attempt, cl *provision.Cluster) error {
	host := ""
	for i, n := range cl.Nodes {
		if i > 0 && n.Host != host {
			return nil
		}
		host = n.Host
	}
	if host == "" || host == a.Host {
		return nil
	}
	if err := c.Store.SetHost(ctx, a.ID, host); err != nil {
		return fmt.Errorf("record the node %s runs on: %w", a.Cluster, err)
	}
	a.Host = host
	return nil
}

func (c *jobStep) launched(ctx context.Context, j *store.Job, task *schema.Task, a *store.Attempt, cl *provision.Cluster) error {
	if requested, err := c.Store.CancelRequested(ctx, j.ID); err == nil && requested {
		// Cancelled as the launch ended: the attempt stays launching, so
		// the cancel tears the cluster down without reaching its nodes,
		// and the task never starts.
		c.aborts.abort(j.ID)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	pl := cl.Placement
	if pl.Cloud == "" {
		pl = attemptPlacement(a)
	}
	if err := c.Store.MarkLaunched(ctx, a.ID, pl.Cloud, pl.Region, pl.Zone, instanceIDs(cl)); err != nil {
		return fmt.Errorf("record the launched cluster: %w", err)
	}
	if err := c.recordHost(ctx, a, cl); err != nil {
		return err
	}
	a.State, a.InstanceIDs = lifecycle.AttemptStarting, instanceIDs(cl)
	return c.startAttempt(ctx, j, task, a)
}

// endLaunch ends an attempt that never got its task started, and its job:
// FAILED_PRECHECKS when no retry can fix why (prechecks), else
// FAILED_NO_RESOURCE. reason says what failed.
func (c *jobStep) endLaunch(ctx context.Context, j *store.Job, a *store.Attempt, p *schema.Pipeline, prechecks bool, reason string) error {
	return c.finish(ctx, j, a, p, ended{outcome: strategy.LaunchFailed, reason: reason, detail: reason, prechecks: prechecks}, nil)
}

func instanceIDs(cl *provision.Cluster) []string {
	ids := make([]string, len(cl.Nodes))
	for i, n := range cl.Nodes {
		ids[i] = n.InstanceID
	}
	return ids
}
