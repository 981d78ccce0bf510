package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"sortie/schema"
	"sortie/strategy"
)

// DefaultFairShareHalfLife is how long a user's past use takes to weigh
// half as much when fair_share.half_life is not given: a week, as Slurm's
// default.
const DefaultFairShareHalfLife = 7 * 24 * time.Hour

// Limit is what a set of jobs may hold at once: running jobs, nodes,
// vCPUs and GPUs by type. An absent key is no limit; 0 allows none.
type Limit struct {
	RunningJobs *int           `json:"running_jobs"`
	Nodes       *int           `json:"nodes"`
	VCPUs       *int           `json:"vcpus"`
	GPUs        map[string]int `json:"gpus"`
	// HourlyCost is what running jobs may cost an hour, in dollars.
	HourlyCost *float64 `json:"hourly_cost"`
}

// GroupLimit is a limit its members' jobs share.
type GroupLimit struct {
	Members     []string       `json:"members"`
	RunningJobs *int           `json:"running_jobs"`
	Nodes       *int           `json:"nodes"`
	VCPUs       *int           `json:"vcpus"`
	GPUs        map[string]int `json:"gpus"`
	HourlyCost  *float64       `json:"hourly_cost"`
}

// LimitsConfig is the limits: section: what running jobs may hold, for
// the whole server, for each user, and for groups of users. A job that
// would go over one waits in PENDING, saying which; one that asks for more
// than one allows is refused at launch.
type LimitsConfig struct {
	Server Limit `json:"server"`
	// PerUser is every user's limit unless Users names their own.
	PerUser *Limit           `json:"per_user"`
	Users   map[string]Limit `json:"users"`
	// Groups are limits shared by their members, by group name.
	Groups map[string]GroupLimit `json:"groups"`
	// Preemption says whether a waiting job may take the place of
	// running jobs of lower priority under a limit: PreemptNever (the
	// default, "" once loaded is never) or PreemptLowerPriority.
	Preemption string `json:"preemption"`
}

// The values of limits.preemption.
const (
	PreemptNever         = "never"
	PreemptLowerPriority = "lower_priority"
)

// Preempts says whether limits.preemption lets a waiting job of higher
// priority preempt admitted jobs of lower priority.
func (l LimitsConfig) Preempts() bool { return l.Preemption == PreemptLowerPriority }

// FairShareConfig is the fair_share: section: how waiting jobs of equal
// priority are ordered between users.
type FairShareConfig struct {
	// HalfLife is how long past use takes to weigh half as much (default
	// a week).
	HalfLife Duration `json:"half_life"`
	// Weights are users' shares; a user not named weighs 1, and one of
	// weight 2 is given twice the use of one of 1.
	Weights map[string]float64 `json:"weights"`
}

// amounts is l as strategy counts it; nil for no limit at all.
func (l Limit) amounts() strategy.Amounts {
	return limitAmounts(l.RunningJobs, l.Nodes, l.VCPUs, l.GPUs, l.HourlyCost)
}

func limitAmounts(jobs, nodes, vcpus *int, gpus map[string]int, hourlyCost *float64) strategy.Amounts {
	a := strategy.Amounts{}
	for r, n := range map[strategy.Resource]*int{strategy.Jobs: jobs, strategy.Nodes: nodes, strategy.VCPUs: vcpus} {
		if n != nil {
			a[r] = *n
		}
	}
	for name, n := range gpus {
		a[strategy.GPU(name)] = n
	}
	if hourlyCost != nil {
		// Whole cents: admission counts amounts as integers.
		a[strategy.HourlyCost] = strategy.Cents(*hourlyCost)
	}
	if len(a) == 0 {
		return nil
	}
	return a
}

// Any says whether any limit is set: without one every job starts when
// launched, in priority order.
func (l LimitsConfig) Any() bool {
	s := l.Strategy()
	if len(s.Server) > 0 || len(s.DefaultUser) > 0 {
		return true
	}
	for _, u := range s.Users {
		if len(u) > 0 {
			return true
		}
	}
	for _, g := range s.Groups {
		if len(g.Limit) > 0 {
			return true
		}
	}
	return false
}

// Strategy is the section as admission takes it; groups in name order.
func (l LimitsConfig) Strategy() strategy.Limits {
	out := strategy.Limits{Server: l.Server.amounts()}
	if l.PerUser != nil {
		out.DefaultUser = l.PerUser.amounts()
	}
	if len(l.Users) > 0 {
		out.Users = map[string]strategy.Amounts{}
		for name, u := range l.Users {
			// A user's own entry replaces the default even when it
			// limits nothing: that user is then not limited.
			out.Users[name] = u.amounts()
			if out.Users[name] == nil {
				out.Users[name] = strategy.Amounts{}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.Groups)) {
		g := l.Groups[name]
		out.Groups = append(out.Groups, strategy.Group{Name: name, Members: g.Members,
			Limit: limitAmounts(g.RunningJobs, g.Nodes, g.VCPUs, g.GPUs, g.HourlyCost)})
	}
	return out
}

// limitsProblems checks the limits: and fair_share: sections and fills
// the half-life's default.
func (cfg *Config) limitsProblems(lines map[string]int) []schema.Problem {
	var out []schema.Problem
	bad := func(path string, format string, args ...any) {
		out = append(out, schema.Problem{Path: path, Line: lines[path], Message: fmt.Sprintf(format, args...)})
	}
	check := func(path string, jobs, nodes, vcpus *int, gpus map[string]int, hourlyCost *float64) {
		if c := hourlyCost; c != nil && (*c < 0 || math.IsNaN(*c) || math.IsInf(*c, 0)) {
			bad(path+".hourly_cost", "%v is not an amount; give the dollars running jobs may cost an hour together (0 or more, e.g. 40)", *c)
		}
		for _, f := range []struct {
			key string
			n   *int
		}{{"running_jobs", jobs}, {"nodes", nodes}, {"vcpus", vcpus}} {
			if f.n != nil && *f.n < 0 {
				bad(path+"."+f.key, "%d is negative; give how many running jobs may hold at once (0 or more), or leave it out for no limit", *f.n)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(gpus)) {
			if gpus[name] < 0 {
				bad(path+".gpus."+name, "%d is negative; give how many %s GPUs running jobs may hold at once (0 or more)", gpus[name], name)
			}
		}
	}
	l := cfg.Limits
	check("limits.server", l.Server.RunningJobs, l.Server.Nodes, l.Server.VCPUs, l.Server.GPUs, l.Server.HourlyCost)
	if l.PerUser != nil {
		check("limits.per_user", l.PerUser.RunningJobs, l.PerUser.Nodes, l.PerUser.VCPUs, l.PerUser.GPUs, l.PerUser.HourlyCost)
	}
	for _, name := range slices.Sorted(maps.Keys(l.Users)) {
		u := l.Users[name]
		check("limits.users."+name, u.RunningJobs, u.Nodes, u.VCPUs, u.GPUs, u.HourlyCost)
	}
	for _, name := range slices.Sorted(maps.Keys(l.Groups)) {
		g := l.Groups[name]
		path := "limits.groups." + name
		if len(g.Members) == 0 {
			bad(path+".members", "is empty; list the users whose jobs share this limit, e.g. members: [alice, bob]")
		}
		check(path, g.RunningJobs, g.Nodes, g.VCPUs, g.GPUs, g.HourlyCost)
	}
	switch l.Preemption {
	case "":
		cfg.Limits.Preemption = PreemptNever
	case PreemptNever, PreemptLowerPriority:
	default:
		bad("limits.preemption", "%q is not a preemption policy; give %s (the default: no running job is stopped for another) or %s (a waiting job may take the place of running jobs of lower priority)",
			l.Preemption, PreemptNever, PreemptLowerPriority)
	}
	fs := &cfg.FairShare
	if fs.HalfLife < 0 {
		bad("fair_share.half_life", "%v is negative; give how long past use takes to weigh half as much, e.g. 168h", fs.HalfLife.D())
	}
	if fs.HalfLife == 0 {
		fs.HalfLife = Duration(DefaultFairShareHalfLife)
	}
	for _, name := range slices.Sorted(maps.Keys(fs.Weights)) {
		if w := fs.Weights[name]; w <= 0 {
			bad("fair_share.weights."+name, "%v is not a weight; give a number above 0 (1 is an equal share, 2 twice that)", w)
		}
	}
	return out
}
