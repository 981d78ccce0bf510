package service

import (
	"context"
	"time"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// Usage is `sortie server usage` (GET /v1/usage): each user with jobs
// running or waiting, what they hold against the limits in effect
// (config.yaml's with the quotas), their fair-share weight, decayed use
// and share, and how many jobs they have waiting. An admin sees every
// user; a user who is no admin sees their own row alone (with nothing
// held when they have no job), which carries the server's total and
// limit, as Slurm's sshare shows a user their own association.
func (s *Service) Usage(ctx context.Context) ([]contract.UsageView, error) {
	a := s.asker()
	only := ""
	if !a.Admin {
		only = a.Name
	}
	return UsageRows(ctx, s.Config, s.Store, s.now(), only)
}

// UsageRows are the rows of `sortie server usage` over st at now; only,
// when not "", keeps that user's row alone (made when they hold and wait
// for nothing).
func UsageRows(ctx context.Context, cfg config.Config, st *store.Store, now time.Time, only string) ([]contract.UsageView, error) {
	halfLife := cfg.FairShare.HalfLife.D()
	if halfLife == 0 {
		halfLife = config.DefaultFairShareHalfLife
	}
	f, err := st.AdmissionFacts(ctx, now.Add(-strategy.UseWindow(halfLife)))
	if err != nil {
		return nil, err
	}
	limits := store.ApplyQuotas(cfg.Limits.Strategy(), f.Quotas)
	rows := strategy.Usage(strategy.AdmitInput{Now: now, Waiting: f.Waiting, Held: f.Held,
		Limits: limits, Weights: cfg.FairShare.Weights, Used: f.Used, HalfLife: halfLife})
	total := strategy.Amounts{}
	for _, h := range f.Held {
		for r, n := range h {
			total[r] += n
		}
	}
	if only != "" {
		var mine []strategy.UserUsage
		for _, r := range rows {
			if r.User == only {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			w := cfg.FairShare.Weights[only]
			if w <= 0 {
				w = 1
			}
			use := strategy.DecayedUse(f.Used, now, halfLife)
			all := 0.0
			for _, u := range use {
				all += u
			}
			row := strategy.UserUsage{User: only, Held: strategy.Amounts{}, Limit: limits.UserLimit(only), Weight: w, Use: use[only]}
			if all > 0 {
				row.Share = use[only] / all
			}
			mine = append(mine, row)
		}
		rows = mine
	}
	return contract.UsageViews(rows, limits.Server, total, halfLife), nil
}

// expectedHourlyCost is what job p is expected to cost an hour, in cents,
// as a dollar limit counts it while the job waits: for each task its
// cheapest placement whose price is known (every node, at the prices a
// plan shows), and the most of any task, since a pipeline's tasks run one
// at a time. A task no price is known for asks 0; so does a job whose
// placements cannot be listed. Once an attempt bills, what it costs
// counts instead.
func (s *Service) expectedHourlyCost(ctx context.Context, p *schema.Pipeline) int {
	if s.Clouds == nil {
		return 0
	}
	most := 0
	for _, t := range p.Tasks {
		pps, _, err := s.placements(ctx, t)
		if err != nil {
			continue
		}
		cheapest := -1.0
		for _, pp := range pps {
			if pp.HourlyCost != nil && (cheapest < 0 || *pp.HourlyCost < cheapest) {
				cheapest = *pp.HourlyCost
			}
		}
		most = max(most, strategy.Cents(cheapest))
	}
	return most
}

// countsDollars says whether any limit of l is a dollar limit.
func countsDollars(l strategy.Limits) bool {
	has := func(a strategy.Amounts) bool { _, ok := a[strategy.HourlyCost]; return ok }
	if has(l.Server) || has(l.DefaultUser) {
		return true
	}
	for _, u := range l.Users {
		if has(u) {
			return true
		}
	}
	for _, g := range l.Groups {
		if has(g.Limit) {
			return true
		}
	}
	return false
}
