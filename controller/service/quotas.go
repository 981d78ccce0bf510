package service

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/strategy"
)

// Limits are the limits in effect now: config.yaml's limits: section,
// each scope's entry replaced by a quota set through the server (`sortie
// server quotas set`); stored says some quota is.
func (s *Service) Limits(ctx context.Context) (limits strategy.Limits, stored bool, err error) {
	qs, err := s.Store.Quotas(ctx)
	if err != nil {
		return strategy.Limits{}, false, err
	}
	return store.ApplyQuotas(s.Config.Limits.Strategy(), qs), len(qs) > 0, nil
}

// Quotas is `sortie server quotas`: every limit in effect (the server's,
// every user's default, each user's and each group's), each saying where
// it comes from. Any user may list them: they say why jobs wait.
func (s *Service) Quotas(ctx context.Context) ([]contract.QuotaView, error) {
	qs, err := s.Store.Quotas(ctx)
	if err != nil {
		return nil, err
	}
	return quotaViews(s.Config.Limits, qs), nil
}

// quotaKey is a scope and a name.
type quotaKey struct{ scope, name string }

// configEntries are config.yaml's limits by scope: the server's when it
// limits anything, per_user when given, each user and group.
func configEntries(l config.LimitsConfig) map[quotaKey]contract.QuotaView {
	out := map[quotaKey]contract.QuotaView{}
	st := l.Strategy()
	if len(st.Server) > 0 {
		out[quotaKey{store.QuotaServer, ""}] = contract.QuotaView{Scope: store.QuotaServer, Limit: limitView(st.Server), Source: contract.QuotaFromConfig}
	}
	if l.PerUser != nil {
		out[quotaKey{store.QuotaPerUser, ""}] = contract.QuotaView{Scope: store.QuotaPerUser, Limit: limitView(st.DefaultUser), Source: contract.QuotaFromConfig}
	}
	for name, a := range st.Users {
		out[quotaKey{store.QuotaUser, name}] = contract.QuotaView{Scope: store.QuotaUser, Name: name, Limit: limitView(a), Source: contract.QuotaFromConfig}
	}
	for _, g := range st.Groups {
		out[quotaKey{store.QuotaGroup, g.Name}] = contract.QuotaView{Scope: store.QuotaGroup, Name: g.Name, Members: g.Members,
			Limit: limitView(g.Limit), Source: contract.QuotaFromConfig}
	}
	return out
}

// quotaViews are config.yaml's entries with the stored quotas replacing
// theirs: server, per_user, then users and groups by name.
func quotaViews(l config.LimitsConfig, qs []store.Quota) []contract.QuotaView {
	entries := configEntries(l)
	for _, q := range qs {
		k := quotaKey{q.Scope, q.Name}
		_, had := entries[k]
		entries[k] = quotaView(q, had)
	}
	rank := map[string]int{store.QuotaServer: 0, store.QuotaPerUser: 1, store.QuotaUser: 2, store.QuotaGroup: 3}
	keys := slices.SortedFunc(maps.Keys(entries), func(a, b quotaKey) int {
		if rank[a.scope] != rank[b.scope] {
			return rank[a.scope] - rank[b.scope]
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]contract.QuotaView, 0, len(keys))
	for _, k := range keys {
		out = append(out, entries[k])
	}
	return out
}

func quotaView(q store.Quota, replaces bool) contract.QuotaView {
	at := q.SetAt.UTC()
	v := contract.QuotaView{Scope: q.Scope, Name: q.Name, Limit: limitView(q.Limit), Source: contract.QuotaFromServer,
		SetBy: q.SetBy, SetAt: &at, ReplacesConfig: replaces}
	if q.Scope == store.QuotaGroup {
		v.Members = q.Members
	}
	return v
}

// limitView is a limit with every count given or null, and GPUs {} when
// none is limited.
func limitView(a strategy.Amounts) contract.UsageAmounts {
	if v := contract.LimitAmounts(a); v != nil {
		return *v
	}
	return contract.UsageAmounts{GPUs: map[string]int{}}
}

// SetQuota is `sortie server quotas set`: an admin sets the limit of one
// scope, which replaces config.yaml's entry of that scope (the whole
// entry: a count left out is no limit) from the next admission pass of
// every replica. Jobs running past the new limit go on; new ones wait.
func (s *Service) SetQuota(ctx context.Context, req contract.QuotaRequest) (*contract.QuotaView, error) {
	if err := s.mayAdmin("set a quota"); err != nil {
		return nil, err
	}
	q, err := s.checkQuota(ctx, req)
	if err != nil {
		return nil, err
	}
	q, err = s.Store.SetQuota(ctx, q, s.actor())
	if err != nil {
		return nil, fmt.Errorf("store the quota: %w", err)
	}
	_, had := configEntries(s.Config.Limits)[quotaKey{q.Scope, q.Name}]
	v := quotaView(q, had)
	return &v, nil
}

// UnsetQuota is `sortie server quotas unset`: an admin removes the quota
// of one scope, so that config.yaml's entry holds again; the answer is
// the scope's entry now (source none when config.yaml has none). A scope
// with no quota is ErrNotFound.
func (s *Service) UnsetQuota(ctx context.Context, req contract.QuotaRequest) (*contract.QuotaView, error) {
	if err := s.mayAdmin("unset a quota"); err != nil {
		return nil, err
	}
	if err := checkScope(req); err != nil {
		return nil, err
	}
	if req.RunningJobs != nil || req.Nodes != nil || req.VCPUs != nil || len(req.GPUs) > 0 || req.HourlyCost != nil || len(req.Members) > 0 {
		return nil, usageErrorf("unset takes only the scope (--server, --per-user, --user NAME or --group NAME): it removes that scope's whole quota")
	}
	ok, err := s.Store.UnsetQuota(ctx, req.Scope, req.Name, s.actor())
	if err != nil {
		return nil, fmt.Errorf("remove the quota: %w", err)
	}
	k := quotaKey{req.Scope, req.Name}
	if !ok {
		return nil, &noQuotaError{fmt.Errorf("%s has no quota set through the server (config.yaml's limits change in config.yaml; see `sortie server quotas`): %w",
			scopeName(req.Scope, req.Name), store.ErrNotFound)}
	}
	if v, had := configEntries(s.Config.Limits)[k]; had {
		return &v, nil
	}
	return &contract.QuotaView{Scope: req.Scope, Name: req.Name, Limit: limitView(nil), Source: contract.QuotaFromNone}, nil
}

// scopeName says a scope in a message: "the server", "user alice".
func scopeName(scope, name string) string {
	switch scope {
	case store.QuotaServer:
		return "the server"
	case store.QuotaPerUser:
		return "the per-user default"
	}
	return scope + " " + name
}

func usageErrorf(format string, args ...any) error {
	return &contract.UsageError{Err: fmt.Errorf(format, args...)}
}

// mayAdmin refuses verb to a user who is not an admin.
func (s *Service) mayAdmin(verb string) error {
	if !s.asker().Admin {
		return &contract.AdminError{Verb: verb}
	}
	return nil
}

// actor is the name an admin action is recorded under: the asker's, or
// on the server's machine the user of the process ("server" when the
// environment names none).
func (s *Service) actor() string {
	if n := s.asker().Name; n != "" {
		return n
	}
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if u := getenv("USER"); u != "" {
		return u
	}
	return "server"
}

// quotaName is what a user or group name may be.
var quotaName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]*$`)

// gpuName is what a GPU type may be: a name as tasks write it.
var gpuName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._-]*$`)

func checkScope(req contract.QuotaRequest) error {
	switch req.Scope {
	case store.QuotaServer, store.QuotaPerUser:
		if req.Name != "" {
			return usageErrorf("scope %s takes no name (%q); use --user NAME or --group NAME for a user's or a group's quota", req.Scope, req.Name)
		}
	case store.QuotaUser, store.QuotaGroup:
		if !quotaName.MatchString(req.Name) {
			return usageErrorf("--%s %q: give a %s name (letters, digits, . _ @ -), e.g. --%s alice", req.Scope, req.Name, req.Scope, req.Scope)
		}
	default:
		return usageErrorf("scope %q: give one of --server, --per-user, --user NAME or --group NAME", req.Scope)
	}
	return nil
}

// checkQuota reads a set request as the quota to store, refusing bad
// values with the flag, the value and the fix.
func (s *Service) checkQuota(ctx context.Context, req contract.QuotaRequest) (store.Quota, error) {
	if err := checkScope(req); err != nil {
		return store.Quota{}, err
	}
	q := store.Quota{Scope: req.Scope, Name: req.Name, Limit: strategy.Amounts{}}
	for _, f := range []struct {
		flag, what string
		n          *int
		r          strategy.Resource
	}{{"--running-jobs", "how many jobs may run at once", req.RunningJobs, strategy.Jobs},
		{"--nodes", "how many nodes running jobs may hold at once", req.Nodes, strategy.Nodes},
		{"--vcpus", "how many vCPUs running jobs may hold at once", req.VCPUs, strategy.VCPUs}} {
		if f.n == nil {
			continue
		}
		if *f.n < 0 {
			return q, usageErrorf("%s %d: give %s, 0 or more (0 allows none); leave it out for no limit", f.flag, *f.n, f.what)
		}
		q.Limit[f.r] = *f.n
	}
	if c := req.HourlyCost; c != nil {
		if *c < 0 || math.IsNaN(*c) || math.IsInf(*c, 0) {
			return q, usageErrorf("--hourly-cost %v: give the dollars running jobs may cost an hour together, 0 or more (e.g. 40); leave it out for no limit", *c)
		}
		q.Limit[strategy.HourlyCost] = strategy.Cents(*c)
	}
	known, err := s.knownGPUs(ctx)
	if err != nil {
		return q, err
	}
	for _, name := range slices.Sorted(maps.Keys(req.GPUs)) {
		n := req.GPUs[name]
		if !gpuName.MatchString(name) {
			return q, usageErrorf("--gpu %s=%d: %q is not a GPU type; write the type as tasks name it, e.g. --gpu A100=16", name, n, name)
		}
		if k, ok := known[strings.ToLower(name)]; ok && k != name {
			return q, usageErrorf("--gpu %s=%d: tasks and limits here call this GPU %s, and limits count GPUs by that name; write --gpu %s=%d", name, n, k, k, n)
		}
		if n < 0 {
			return q, usageErrorf("--gpu %s=%d: give how many %s GPUs running jobs may hold at once, 0 or more", name, n, name)
		}
		q.Limit[strategy.GPU(name)] = n
	}
	if req.Scope != store.QuotaGroup {
		if len(req.Members) > 0 {
			return q, usageErrorf("--members %s: only a group has members; use --group NAME --members %s", strings.Join(req.Members, ","), strings.Join(req.Members, ","))
		}
		return q, nil
	}
	q.Members = req.Members
	if len(q.Members) == 0 {
		// A group config.yaml has keeps its members.
		if g, ok := s.Config.Limits.Groups[req.Name]; ok {
			q.Members = g.Members
		}
	}
	if len(q.Members) == 0 {
		return q, usageErrorf("--group %s: config.yaml has no such group, so name its members: --members alice,bob", req.Name)
	}
	for _, m := range q.Members {
		if !quotaName.MatchString(m) {
			return q, usageErrorf("--members: %q is not a user name; list user names separated by commas, e.g. --members alice,bob", m)
		}
	}
	return q, nil
}

// knownGPUs are the GPU types the limits and the unfinished jobs name, by
// their lower case: a quota spelling one in another case would limit
// nothing those jobs hold.
func (s *Service) knownGPUs(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	add := func(a strategy.Amounts) {
		for r := range a {
			if r.IsGPU() {
				out[strings.ToLower(r.Unit())] = r.Unit()
			}
		}
	}
	limits, _, err := s.Limits(ctx)
	if err != nil {
		return nil, err
	}
	add(limits.Server)
	add(limits.DefaultUser)
	for _, u := range limits.Users {
		add(u)
	}
	for _, g := range limits.Groups {
		add(g.Limit)
	}
	f, err := s.Store.AdmissionFacts(ctx, s.now())
	if err != nil {
		return nil, err
	}
	for _, w := range f.Waiting {
		add(w.Ask)
	}
	for _, h := range f.Held {
		add(h)
	}
	return out, nil
}

// noQuotaError is an unset of a scope without a quota: 404 from the API.
type noQuotaError struct{ err error }

func (e *noQuotaError) Error() string  { return e.err.Error() }
func (e *noQuotaError) Unwrap() error  { return e.err }
func (e *noQuotaError) NotFound() bool { return true }
