package contract

import (
	"time"

	"sortie/strategy"
)

// UsageView is one user's row of `sortie server usage -o json`: what
// their jobs hold now against their limit and the server's, their
// fair-share weight, their decayed use and its share of everyone's, and
// how many of their jobs wait.
type UsageView struct {
	User        string        `json:"user"`
	Held        UsageAmounts  `json:"held"`
	UserLimit   *UsageAmounts `json:"user_limit"`
	ServerLimit *UsageAmounts `json:"server_limit"`
	Weight      float64       `json:"weight"`
	// DecayedUse is in charge-hours: GPU-hours for jobs with GPUs, else
	// vCPU-hours, else node-hours, each hour weighing half as much every
	// fair_share.half_life after it.
	DecayedUse float64 `json:"decayed_use"`
	Share      float64 `json:"share"`
	Waiting    int     `json:"waiting"`
	// ServerHeld is what every user's admitted, unfinished jobs hold
	// together: the server's line, which a user who is no admin sees
	// beside their own row alone.
	ServerHeld UsageAmounts `json:"server_held"`
	// HalfLifeHours is fair_share.half_life, in hours.
	HalfLifeHours float64 `json:"half_life_hours"`
}

// UsageAmounts are counts of what a limit counts; in a limit, a null
// count is no limit.
type UsageAmounts struct {
	RunningJobs *int           `json:"running_jobs"`
	Nodes       *int           `json:"nodes"`
	VCPUs       *int           `json:"vcpus"`
	GPUs        map[string]int `json:"gpus"`
	// HourlyCost is in dollars an hour: what running jobs cost (their
	// recorded price, every node; a job not yet billing, what it was
	// expected to cost at launch), or a limit of it.
	HourlyCost *float64 `json:"hourly_cost"`
}

// HeldAmounts is what a holds, every count given (0 for none).
func HeldAmounts(a strategy.Amounts) UsageAmounts {
	n := func(r strategy.Resource) *int { v := a[r]; return &v }
	out := UsageAmounts{RunningJobs: n(strategy.Jobs), Nodes: n(strategy.Nodes), VCPUs: n(strategy.VCPUs), GPUs: map[string]int{},
		HourlyCost: dollars(a[strategy.HourlyCost])}
	for r, v := range a {
		if r.IsGPU() {
			out.GPUs[r.Unit()] = v
		}
	}
	return out
}

// dollars is cents as dollars.
func dollars(cents int) *float64 {
	d := float64(cents) / 100
	return &d
}

// LimitAmounts is limit a, a count it leaves out null; nil for no limit.
func LimitAmounts(a strategy.Amounts) *UsageAmounts {
	if len(a) == 0 {
		return nil
	}
	n := func(r strategy.Resource) *int {
		if v, ok := a[r]; ok {
			return &v
		}
		return nil
	}
	out := UsageAmounts{RunningJobs: n(strategy.Jobs), Nodes: n(strategy.Nodes), VCPUs: n(strategy.VCPUs), GPUs: map[string]int{}}
	if c, ok := a[strategy.HourlyCost]; ok {
		out.HourlyCost = dollars(c)
	}
	for r, v := range a {
		if r.IsGPU() {
			out.GPUs[r.Unit()] = v
		}
	}
	return &out
}

// UsageViews are rows as `server usage -o json` prints them: server is
// the server's limit, held what every user holds, halfLife the decay's.
func UsageViews(rows []strategy.UserUsage, server, held strategy.Amounts, halfLife time.Duration) []UsageView {
	out := make([]UsageView, 0, len(rows))
	for _, r := range rows {
		out = append(out, UsageView{User: r.User, Held: HeldAmounts(r.Held), UserLimit: LimitAmounts(r.Limit),
			ServerLimit: LimitAmounts(server), Weight: r.Weight, DecayedUse: r.Use / 3600, Share: r.Share, Waiting: r.Waiting,
			ServerHeld: HeldAmounts(held), HalfLifeHours: halfLife.Hours()})
	}
	return out
}
