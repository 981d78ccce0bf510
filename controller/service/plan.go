package service

import (
	"context"
	"errors"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/prices"
	"sortie/controller/store"
	"sortie/provision/fit"
	"sortie/provision/price"
	"sortie/schema"
	"sortie/strategy"
)

func planEscalate(e *schema.Escalate) *contract.EscalatePlan {
	if e == nil {
		return nil
	}
	factor := func(f schema.Factor) *string {
		if f == 0 {
			return nil
		}
		return strPtr(f.String())
	}
	p := &contract.EscalatePlan{OnExitCodes: e.OnExitCodes, Memory: factor(e.Memory), MaxMemory: strPtr(e.MaxMemory),
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
func (s *Service) Plan(ctx context.Context, req contract.LaunchRequest) (*contract.Plan, error) {
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
	plan := &contract.Plan{Name: pr.name, InputKey: strPtr(pr.key), Tasks: []contract.TaskPlan{}, Warnings: warned, Missing: []string{}}
	for _, m := range pr.missing {
		plan.Missing = append(plan.Missing, m.Error())
	}
	if plan.Warnings == nil {
		plan.Warnings = []string{}
	}
	var probs []schema.Problem
	for i, t := range p.Tasks {
		rec := t.Recovery()
		tp := contract.TaskPlan{Task: i, Name: strPtr(t.Name), NumNodes: max(t.NumNodes, 1), Ports: taskPorts(t.Resources),
			FileMounts: []contract.MountPlan{}, Envs: sortedKeys(t.Envs), Secrets: sortedKeys(t.Secrets),
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
			tp.WorkdirRepo = &contract.RepoPlan{URL: r.URL, Ref: strPtr(r.Ref)}
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			tp.FileMounts = append(tp.FileMounts, contract.MountPlan{Path: dst, Source: localPath(pr.baseDir, t.FileMounts[dst])})
		}
		var err error
		var refused []*clouds.NotEnabledError
		tp.Placements, refused, err = s.placements(ctx, t)
		switch {
		case err != nil:
			probs = append(probs, schema.Problem{Path: taskPath(p, i, "resources"), Message: err.Error()})
		case len(tp.Placements) == 0:
			// No cloud the task allows is enabled here: what a launch
			// from here lacks, as a missing env is.
			for _, r := range refused {
				plan.Missing = append(plan.Missing, s.notEnabled(p, i, r).Error())
			}
		default:
			for _, r := range refused {
				w := leftOut(p, i, r)
				plan.Warnings = append(plan.Warnings, w)
				if warn != nil {
					warn(w)
				}
			}
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
// request is listed as given. The candidates on a cloud that is not
// enabled here are left out: refused says why of each such cloud, and
// when no candidate is left the list is empty (err is for a request no
// cloud offers).
func (s *Service) placements(ctx context.Context, t *schema.Task) (_ []contract.PlacementPlan, refused []*clouds.NotEnabledError, _ error) {
	resolved := map[schema.Placement]bool{}
	cands, err := strategy.Candidates(t.Resources, func(r schema.Resources) ([]schema.Placement, error) {
		var ne *clouds.NotEnabledError
		if errors.As(s.Clouds.Enabled(r.Cloud, clouds.Machine{Getenv: s.Getenv}), &ne) {
			if !slices.ContainsFunc(refused, func(e *clouds.NotEnabledError) bool { return e.Cloud == ne.Cloud }) {
				refused = append(refused, ne)
			}
			return nil, nil
		}
		ps, ok, err := s.Clouds.ConfigPlacements(ctx, r)
		if ok || err != nil {
			for _, p := range ps {
				resolved[p] = true
			}
			return ps, err
		}
		return []schema.Placement{{Cloud: r.Cloud, Region: r.Region, Zone: r.Zone}}, nil
	})
	if errors.Is(err, strategy.ErrNoCandidates) && len(refused) > 0 {
		return []contract.PlacementPlan{}, refused, nil
	}
	if err != nil {
		return nil, nil, err
	}
	book := s.planBook(ctx)
	now := s.now()
	if t.Resources.PlacementOrder == schema.PlaceCheapest && book != nil {
		// As the controller orders them (resources.placement: cheapest).
		cands = strategy.Cheapest(cands, func(c strategy.Candidate) (float64, bool) {
			h := book.History(price.KeyOf(c.Placement, c.Resources), now, now)
			if len(h) == 0 {
				return 0, false
			}
			return h[len(h)-1].PerHour, true
		})
	}
	cands = strategy.Order(t.Recovery().Strategy, cands, nil, 0)
	out := make([]contract.PlacementPlan, 0, len(cands))
	for _, c := range cands {
		r := c.Resources
		pp := contract.PlacementPlan{Cloud: c.Placement.Cloud, Region: strPtr(c.Placement.Region), Zone: strPtr(c.Placement.Zone),
			ResolvedBy: "controller", InstanceType: strPtr(r.InstanceType), CPUs: strPtr(r.CPUs), Memory: strPtr(r.Memory),
			Accelerators: strPtr(acceleratorsOf(r)), UseSpot: r.UseSpot, ImageID: strPtr(r.ImageID),
			DiskTier: strPtr(r.DiskTier), NetworkTier: strPtr(r.NetworkTier)}
		if resolved[c.Placement] {
			pp.ResolvedBy = "sortie"
		}
		if tag := clouds.Lookup(c.Placement.Cloud).ImageTag; tag != nil {
			if how, ok := tag(r.ImageID); ok {
				pp.ImageLookup = strPtr("resolved at launch: " + how)
			}
		}
		if r.DiskSize > 0 {
			pp.DiskSize = &r.DiskSize
		}
		// A VM cloud picks the smallest machine with these when nothing
		// is asked.
		if c.Placement.Cloud != "" && clouds.Lookup(c.Placement.Cloud).Remote && r.InstanceType == "" && r.CPUs == "" && r.Memory == "" && len(r.Accelerators) == 0 {
			pp.CPUs, pp.Memory = strPtr(fit.DefaultCPUs), strPtr(fit.DefaultMemory)
		}
		if book != nil {
			if h := book.History(price.KeyOf(c.Placement, r), now, now); len(h) > 0 {
				one := h[len(h)-1].PerHour
				all := one * float64(max(t.NumNodes, 1))
				pp.PricePerHour, pp.HourlyCost = &one, &all
			}
		}
		out = append(out, pp)
	}
	return out, refused, nil
}

// notEnabled is the problem of task i of a launch that no cloud it
// allows is enabled for: cloud e, why, and where to see what each cloud
// lacks (`sortie check` on the machine that launches).
func (s *Service) notEnabled(p *schema.Pipeline, i int, e *clouds.NotEnabledError) schema.Problem {
	return schema.Problem{Path: taskPath(p, i, "resources"), Message: s.notEnabledText(e)}
}

// notEnabledText is e with where `sortie check` says more.
func (s *Service) notEnabledText(e *clouds.NotEnabledError) string {
	hint := "`sortie check` says what each cloud lacks"
	if s.Inputs != nil {
		hint = "`sortie check` on the server's machine says what each cloud lacks"
	}
	return e.Error() + "; " + hint
}

// storeNotEnabled says why the cloud whose buckets store holds (aws for
// s3) is not enabled here, with notEnabled's hint; nil when it is, or
// when no cloud holds them.
func (s *Service) storeNotEnabled(store string) error {
	for _, c := range clouds.Known() {
		if c.Task.Store != store {
			continue
		}
		var ne *clouds.NotEnabledError
		if errors.As(s.Clouds.Enabled(c.Name, clouds.Machine{Getenv: s.Getenv}), &ne) {
			return errors.New(s.notEnabledText(ne))
		}
	}
	return nil
}

// leftOut is the warning of a launch of task i that leaves out the
// candidates of cloud e, which is not enabled, as others are left.
func leftOut(p *schema.Pipeline, i int, e *clouds.NotEnabledError) string {
	return taskPath(p, i, "resources") + ": " + e.Cloud + " is not enabled here, so its placements are left out (`sortie check` says why)"
}

// formatAccelerators writes accelerators as a task file does: "A100:1",
// several in name order separated by ", ".
// acceleratorsOf writes r's accelerators as formatAccelerators does, a
// fraction of one as the file does (A100:0.5).
func acceleratorsOf(r schema.Resources) string {
	if r.AcceleratorShare > 0 && len(r.Accelerators) == 1 {
		for name := range r.Accelerators {
			return name + ":" + strconv.FormatFloat(r.AcceleratorShare, 'g', -1, 64)
		}
	}
	return formatAccelerators(r.Accelerators)
}

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

// planBook is the book of prices a plan is priced with: the prices the
// store's cache holds (the controller reads them from the clouds), loaded
// once; nil when they cannot be read.
func (s *Service) planBook(ctx context.Context) price.Book {
	st := s.Store
	if st == nil {
		// A dry run opens no store to launch, but reads the prices of
		// one that exists; it never makes one.
		u := s.Config.StoreURL()
		if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
			if _, err := os.Stat(strings.TrimPrefix(u, "sqlite:")); err != nil {
				return nil
			}
		}
		var err error
		if st, err = store.OpenURL(ctx, u, nil); err != nil {
			return nil
		}
		defer st.Close()
	}
	b := prices.NewBook(st, prices.Intervals{OnDemand: s.Config.Prices.OnDemandRefresh.D(), Spot: s.Config.Prices.SpotRefresh.D()}, s.now)
	if err := b.Load(ctx); err != nil {
		return nil
	}
	return b
}
