package service

import (
	"context"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/provision/fit"
	"sortie/schema"
	"sortie/strategy"
)

func planEscalate(e *schema.Escalate) *EscalatePlan {
	if e == nil {
		return nil
	}
	factor := func(f schema.Factor) *string {
		if f == 0 {
			return nil
		}
		return strPtr(f.String())
	}
	p := &EscalatePlan{OnExitCodes: e.OnExitCodes, Memory: factor(e.Memory), MaxMemory: strPtr(e.MaxMemory),
		CPUs: factor(e.CPUs), MaxCPUs: strPtr(e.MaxCPUs), Accelerators: e.Accelerators}
	if p.OnExitCodes == nil {
		p.OnExitCodes = []int{}
	}
	if p.Accelerators == nil {
		p.Accelerators = []string{}
	}
	return p
}

// OpenConfig opens home's configuration only, for a verb that reads no
// store: it creates nothing, not even the home.
func OpenConfig(h string, cls []clouds.Cloud) (*Service, error) {
	cfg, err := config.Load(h, os.Getenv)
	if err != nil {
		return nil, err
	}
	return &Service{Home: h, Config: cfg, Clouds: clouds.NewSet(cfg, cls), Now: time.Now, Getenv: os.Getenv}, nil
}

// Plan validates a launch as Launch does and says where it would run,
// storing nothing and starting nothing. A problem with the file, the
// flags or the placements is an error (every one in one
// *schema.ValidationError); what only the launch lacks (an env value, a
// local file, a bucket) is listed in the plan's Missing, so that a valid
// file passes wherever it is checked.
func (s *Service) Plan(ctx context.Context, req LaunchRequest) (*Plan, error) {
	var warned []string
	warn := req.Warn
	req.Warn = func(w string) {
		warned = append(warned, w)
		if warn != nil {
			warn(w)
		}
	}
	pr, err := s.prepare(req)
	if err != nil {
		return nil, err
	}
	p := pr.pipeline
	plan := &Plan{Name: pr.name, InputKey: strPtr(pr.key), Tasks: []TaskPlan{}, Warnings: warned, Missing: []string{}}
	for _, m := range pr.missing {
		plan.Missing = append(plan.Missing, m.Error())
	}
	if plan.Warnings == nil {
		plan.Warnings = []string{}
	}
	var probs []schema.Problem
	for i, t := range p.Tasks {
		rec := t.Recovery()
		tp := TaskPlan{Task: i, Name: strPtr(t.Name), NumNodes: max(t.NumNodes, 1), Ports: taskPorts(t.Resources),
			FileMounts: []MountPlan{}, Envs: sortedKeys(t.Envs), Secrets: sortedKeys(t.Secrets),
			Strategy: string(rec.Strategy), MaxRestartsOnErrors: rec.MaxRestartsOnErrors,
			RecoverOnExitCodes: rec.RecoverOnExitCodes, MaxRecoveries: rec.MaxRecoveries, MaxRestartsWithoutProgress: rec.MaxRestartsWithoutProgress,
			Escalate: planEscalate(rec.Escalate)}
		if rec.MaxDuration > 0 {
			tp.MaxDuration = strPtr(rec.MaxDuration.String())
		}
		if tp.RecoverOnExitCodes == nil {
			tp.RecoverOnExitCodes = []int{}
		}
		if t.Workdir != "" {
			w := localPath(pr.baseDir, t.Workdir)
			tp.Workdir = &w
		}
		if r := t.WorkdirRepo; r != nil {
			tp.WorkdirRepo = &RepoPlan{URL: r.URL, Ref: strPtr(r.Ref)}
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			tp.FileMounts = append(tp.FileMounts, MountPlan{Path: dst, Source: localPath(pr.baseDir, t.FileMounts[dst])})
		}
		var err error
		tp.Placements, err = s.placements(ctx, t)
		if err != nil {
			probs = append(probs, schema.Problem{Path: taskPath(p, i, "resources"), Message: err.Error()})
		}
		plan.Tasks = append(plan.Tasks, tp)
	}
	if len(probs) > 0 {
		return nil, &schema.ValidationError{Problems: probs}
	}
	for _, w := range bucketRegionWarnings(ctx, p, plan.Tasks, s.Config) {
		plan.Warnings = append(plan.Warnings, w)
		if warn != nil {
			warn(w)
		}
	}
	return plan, nil
}

// placements lists a task's candidates as the controller would order a
// first launch. A cloud known from the configuration alone (local, sim)
// is asked here; any other (aws, gcp) only by the controller, so its
// request is listed as given.
func (s *Service) placements(ctx context.Context, t *schema.Task) ([]PlacementPlan, error) {
	resolved := map[schema.Placement]bool{}
	cands, err := strategy.Candidates(t.Resources, func(r schema.Resources) ([]schema.Placement, error) {
		ps, ok, err := s.Clouds.ConfigPlacements(ctx, r)
		if ok || err != nil {
			for _, p := range ps {
				resolved[p] = true
			}
			return ps, err
		}
		return []schema.Placement{{Cloud: r.Cloud, Region: r.Region, Zone: r.Zone}}, nil
	})
	if err != nil {
		return nil, err
	}
	cands = strategy.Order(t.Recovery().Strategy, cands, nil, 0)
	out := make([]PlacementPlan, 0, len(cands))
	for _, c := range cands {
		r := c.Resources
		pp := PlacementPlan{Cloud: c.Placement.Cloud, Region: strPtr(c.Placement.Region), Zone: strPtr(c.Placement.Zone),
			ResolvedBy: "controller", InstanceType: strPtr(r.InstanceType), CPUs: strPtr(r.CPUs), Memory: strPtr(r.Memory),
			Accelerators: strPtr(formatAccelerators(r.Accelerators)), UseSpot: r.UseSpot, ImageID: strPtr(r.ImageID),
			DiskTier: strPtr(r.DiskTier), NetworkTier: strPtr(r.NetworkTier)}
		if resolved[c.Placement] {
			pp.ResolvedBy = "sortie"
		}
		if r.DiskSize > 0 {
			pp.DiskSize = &r.DiskSize
		}
		// A VM cloud picks the smallest machine with these when nothing
		// is asked.
		if c.Placement.Cloud != "" && clouds.Lookup(c.Placement.Cloud).Remote && r.InstanceType == "" && r.CPUs == "" && r.Memory == "" && len(r.Accelerators) == 0 {
			pp.CPUs, pp.Memory = strPtr(fit.DefaultCPUs), strPtr(fit.DefaultMemory)
		}
		out = append(out, pp)
	}
	return out, nil
}

// formatAccelerators writes accelerators as a task file does: "A100:1",
// several in name order separated by ", ".
func formatAccelerators(acc map[string]int) string {
	names := make([]string, 0, len(acc))
	for n := range acc {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ":" + strconv.Itoa(acc[n])
	}
	return strings.Join(parts, ", ")
}
