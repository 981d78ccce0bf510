package strategy

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"sortie/schema"
)

// QuarantinePolicy is the controller's quarantine: section.
//
// Every failure that is not its inputs' (see PlacementFailure) weighs 1
// when it happens, and its weight halves every HalfLife after. A job counts
// once per placement, by its newest such failure there. A placement is
// quarantined while both hold:
//
//   - at least Threshold different jobs failed there within the window, the
//     last 2×HalfLife (weights of 1/4 and more);
//   - the weighted count is at least Threshold/2.
//
// With the defaults (3, 30m), three jobs that lose their node in one zone
// within a few minutes set it aside for about 30 minutes after the third:
// the count, 3, halves to 1.5 in one half-life. More failures there keep it
// aside longer; three failures an hour apart never do (1/4 + 1/2 + 1 < 1.5
// at the third, and the first is out of the window).
type QuarantinePolicy struct {
	// Threshold is how many different jobs must fail on one placement;
	// 0 turns quarantine off.
	Threshold int
	// HalfLife is how long a failure takes to weigh half as much.
	HalfLife time.Duration
}

// The defaults of the quarantine: section.
const (
	DefaultQuarantineThreshold = 3
	DefaultQuarantineHalfLife  = 30 * time.Minute
)

// DefaultQuarantine is the policy when config.yaml has no quarantine: section.
func DefaultQuarantine() QuarantinePolicy {
	return QuarantinePolicy{Threshold: DefaultQuarantineThreshold, HalfLife: DefaultQuarantineHalfLife}
}

// Window is how far back failures count: 2×HalfLife.
func (p QuarantinePolicy) Window() time.Duration { return 2 * p.HalfLife }

// PlacementFailure is one ended attempt that may count against where it ran.
type PlacementFailure struct {
	Placement schema.Placement
	// InstanceType is the instance type the attempt asked for ("" when it
	// asked by CPUs and memory): the failure also counts against that type
	// in its zone.
	InstanceType string
	// Host is the Kubernetes node every node of the attempt ran on ("" on
	// VM clouds, and when its pods ran on several nodes): the failure then
	// counts against that node, not against the namespace.
	Host  string
	JobID int64
	// InputKey is the task's input key ("" when it has none): a setup
	// failure counts only when another input failed setup there with the
	// same code.
	InputKey string
	Outcome  Outcome
	// ExitCode is the setup step's exit code (the first node's that
	// failed), nil when unknown or for other outcomes.
	ExitCode *int
	// Flaky says a confirmation run found the failure flaky
	// (job_recovery.confirm_failures): the same inputs ended otherwise on
	// another run, so the failure is not the inputs' and counts against
	// where it happened, whatever its outcome.
	Flaky bool
	At    time.Time
}

// Quarantined is a placement set aside, and why: a zone, an instance type
// in a zone, or a Kubernetes node (see QuarantineKey).
type Quarantined struct {
	Placement    schema.Placement
	InstanceType string
	Host         string
	// Jobs are the different jobs whose failures count, newest first.
	Jobs []int64
	// Weight is the weighted count now.
	Weight float64
	// Until is when it stops being quarantined unless more failures come.
	Until time.Time
	// Cause says what the jobs did there: "lost their node", "failed
	// setup with exit 7", or both.
	Cause string
}

// Key is what q sets aside.
func (q Quarantined) Key() QuarantineKey {
	return QuarantineKey{Placement: q.Placement, InstanceType: q.InstanceType, Host: q.Host}
}

// Reason is the launch try's text for a placement set aside:
//
//	local/local/local-a set aside until 14:32 UTC: 3 jobs lost their node there
//	m6i.large in aws/us-east-1/us-east-1a set aside until 14:32 UTC: 3 jobs lost their node there
//	node gpu-7 of kubernetes/prod set aside until 14:32 UTC: 3 jobs lost their node there
func (q Quarantined) Reason() string {
	return fmt.Sprintf("%s set aside until %s: %d jobs %s there", q.Key().describe(), q.Until.UTC().Format("15:04 MST"), len(q.Jobs), q.Cause)
}

// CountsAgainstPlacement reports whether an attempt's outcome may count
// against where it ran: a lost node always may, a failed setup only when
// other inputs fail the same way there (Quarantine checks that). A run step
// that failed is the task's own failure unless a confirmation found it
// flaky (PlacementFailure.Flaky); a preemption is the cloud taking back
// what it lent, not a fault of the place.
func CountsAgainstPlacement(o Outcome) bool {
	return o == NodeLost || o == SetupFailure
}

// ClearedAt says, for a key, the last time a user cleared it; failures at
// or before it do not count. A clear of a zone clears the instance types
// in it too.
type ClearedAt func(QuarantineKey) time.Time

// PlacementKey is a placement as quarantine compares them: the cloud's name
// is case-insensitive.
func PlacementKey(p schema.Placement) schema.Placement {
	p.Cloud = strings.ToLower(p.Cloud)
	return p
}

// keys are what f counts against: its Kubernetes node when it has one,
// else its zone and, when it asked for one, its instance type there.
func (f PlacementFailure) keys() []QuarantineKey {
	if f.Host != "" {
		return []QuarantineKey{QuarantineKey{Placement: f.Placement, Host: f.Host}.Normal()}
	}
	ks := []QuarantineKey{{Placement: PlacementKey(f.Placement)}}
	if f.InstanceType != "" {
		ks = append(ks, QuarantineKey{Placement: PlacementKey(f.Placement), InstanceType: f.InstanceType})
	}
	return ks
}

// Quarantine returns what is quarantined at now, from the failures seen
// (any order) and when each key was last cleared (nil: never). Each
// failure counts against its zone and its instance type there, or, on
// Kubernetes, against its node (PlacementFailure.keys). A zone whose
// failing jobs all asked for one instance type sets aside that type
// there, not the zone; a zone whose jobs asked for several sets aside the
// zone, and none of its types apart. The result is sorted by key.
func Quarantine(p QuarantinePolicy, failures []PlacementFailure, cleared ClearedAt, now time.Time) []Quarantined {
	if p.Threshold <= 0 || p.HalfLife <= 0 {
		return nil
	}
	from := now.Add(-p.Window())
	type key struct {
		k    QuarantineKey
		code int
	}
	type counted struct {
		k QuarantineKey
		f PlacementFailure
	}
	clearedAt := func(k QuarantineKey) time.Time {
		if cleared == nil {
			return time.Time{}
		}
		at := cleared(k)
		if z := k.zone(); z != k {
			if zat := cleared(z); zat.After(at) {
				at = zat
			}
		}
		return at
	}
	// Setup failures count when two different inputs failed with one code.
	inputs := map[key][]string{}
	var fs []counted
	for _, f := range failures {
		if !(f.Flaky || CountsAgainstPlacement(f.Outcome)) || f.At.Before(from) {
			continue
		}
		if f.Outcome == SetupFailure && !f.Flaky && f.ExitCode == nil {
			continue
		}
		for _, k := range f.keys() {
			if !f.At.After(clearedAt(k)) {
				continue
			}
			if f.Outcome == SetupFailure && !f.Flaky {
				kc := key{k, *f.ExitCode}
				if !slices.Contains(inputs[kc], f.InputKey) {
					inputs[kc] = append(inputs[kc], f.InputKey)
				}
			}
			fs = append(fs, counted{k, f})
		}
	}
	// The newest counting failure of each job on each key.
	newest := map[QuarantineKey]map[int64]PlacementFailure{}
	for _, c := range fs {
		f := c.f
		if f.Outcome == SetupFailure && !f.Flaky && len(inputs[key{c.k, *f.ExitCode}]) < 2 {
			continue
		}
		byJob := newest[c.k]
		if byJob == nil {
			byJob = map[int64]PlacementFailure{}
			newest[c.k] = byJob
		}
		if old, ok := byJob[f.JobID]; !ok || f.At.After(old.At) {
			byJob[f.JobID] = f
		}
	}
	var out []Quarantined
	// oneType says the jobs that set a zone aside all asked for one
	// instance type: that type is to blame there, not the zone.
	oneType := map[QuarantineKey]bool{}
	for k, byJob := range newest {
		if len(byJob) < p.Threshold {
			continue
		}
		jobs := make([]PlacementFailure, 0, len(byJob))
		for _, f := range byJob {
			jobs = append(jobs, f)
		}
		sort.Slice(jobs, func(i, j int) bool {
			if !jobs[i].At.Equal(jobs[j].At) {
				return jobs[i].At.After(jobs[j].At)
			}
			return jobs[i].JobID > jobs[j].JobID
		})
		weight := 0.0
		for _, f := range jobs {
			weight += p.weight(f.At, now)
		}
		floor := float64(p.Threshold) / 2
		if weight < floor {
			continue
		}
		// The count falls to the floor after log2(weight/floor) half-lives;
		// the threshold-th newest job leaves the window before that when
		// it is older.
		until := now.Add(time.Duration(math.Log2(weight/floor) * float64(p.HalfLife)))
		if left := jobs[p.Threshold-1].At.Add(p.Window()); left.Before(until) {
			until = left
		}
		if !until.After(now) {
			continue
		}
		q := Quarantined{Placement: k.Placement, InstanceType: k.InstanceType, Host: k.Host, Weight: weight, Until: until, Cause: cause(jobs)}
		for _, f := range jobs {
			q.Jobs = append(q.Jobs, f.JobID)
		}
		if k.Level() == LevelZone {
			oneType[k] = jobs[0].InstanceType != "" && !slices.ContainsFunc(jobs, func(f PlacementFailure) bool { return f.InstanceType != jobs[0].InstanceType })
		}
		out = append(out, q)
	}
	// Say each failure once, at the level that explains it: the instance
	// type in its zone when every job there asked for it, else the zone.
	zones := map[QuarantineKey]bool{}
	for _, q := range out {
		if k := q.Key(); k.Level() == LevelZone && !oneType[k] {
			zones[k] = true
		}
	}
	out = slices.DeleteFunc(out, func(q Quarantined) bool {
		switch k := q.Key(); k.Level() {
		case LevelZone:
			return oneType[k]
		case LevelInstanceType:
			return zones[k.zone()]
		}
		return false
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key().String() < out[j].Key().String() })
	return out
}

// weight is a failure's weight at now: 1 when it happened, halving every
// HalfLife; a failure stamped after now (a replica's clock ahead) weighs 1.
func (p QuarantinePolicy) weight(at, now time.Time) float64 {
	age := now.Sub(at)
	if age <= 0 {
		return 1
	}
	return math.Exp2(-float64(age) / float64(p.HalfLife))
}

// cause says what the jobs did, in a phrase after "N jobs".
func cause(jobs []PlacementFailure) string {
	lost, flaky := 0, 0
	setup := map[int]int{}
	var codes []int
	for _, f := range jobs {
		if f.Flaky {
			flaky++
			continue
		}
		if f.Outcome == NodeLost {
			lost++
			continue
		}
		if setup[*f.ExitCode] == 0 {
			codes = append(codes, *f.ExitCode)
		}
		setup[*f.ExitCode]++
	}
	slices.Sort(codes)
	var parts []string
	if lost > 0 {
		parts = append(parts, "lost their node")
	}
	if flaky > 0 {
		parts = append(parts, "failed flakily")
	}
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("failed setup with exit %d", c))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	// Mixed causes: say how many of each.
	parts = parts[:0]
	if lost > 0 {
		parts = append(parts, fmt.Sprintf("%d lost their node", lost))
	}
	if flaky > 0 {
		parts = append(parts, fmt.Sprintf("%d failed flakily", flaky))
	}
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d failed setup with exit %d", setup[c], c))
	}
	return "failed (" + strings.Join(parts, ", ") + ")"
}

// SetAside moves the candidates on a quarantined zone, or asking for a
// quarantined instance type in their zone, to the end, keeping the order
// within each part: a quarantined placement is never removed, so when only
// those are left they are still tried. It also returns the quarantines
// that moved a candidate, or that name a Kubernetes node of a candidate's
// cluster (which AvoidHosts gives the launch), in candidate order. The
// input is never modified.
func SetAside(cands []Candidate, qs []Quarantined) ([]Candidate, []Quarantined) {
	if len(qs) == 0 {
		return append([]Candidate(nil), cands...), nil
	}
	var ok, aside []Candidate
	var why []Quarantined
	note := func(q Quarantined) {
		if !slices.ContainsFunc(why, func(w Quarantined) bool { return w.Key() == q.Key() }) {
			why = append(why, q)
		}
	}
	for _, c := range cands {
		zone := QuarantineKey{Placement: PlacementKey(c.Placement)}
		typ := QuarantineKey{Placement: zone.Placement, InstanceType: c.Resources.InstanceType}
		moved := false
		for _, q := range qs {
			switch k := q.Key(); {
			case k == zone, typ.InstanceType != "" && k == typ:
				if !moved {
					aside = append(aside, c)
					moved = true
				}
				note(q)
			case k.Level() == LevelNode && k.Placement.Cloud == zone.Placement.Cloud && k.Placement.Region == zone.Placement.Region:
				note(q)
			}
		}
		if !moved {
			ok = append(ok, c)
		}
	}
	return append(ok, aside...), why
}

// AvoidHosts are the Kubernetes nodes quarantined in c's cluster (its
// cloud and region), sorted: the launch asks the scheduler to place the
// pods elsewhere when it can, which tries those nodes last.
func AvoidHosts(c Candidate, qs []Quarantined) []string {
	var hosts []string
	pl := PlacementKey(c.Placement)
	for _, q := range qs {
		if k := q.Key(); k.Level() == LevelNode && k.Placement.Cloud == pl.Cloud && k.Placement.Region == pl.Region && !slices.Contains(hosts, k.Host) {
			hosts = append(hosts, k.Host)
		}
	}
	slices.Sort(hosts)
	return hosts
}

// ClassSetAside is the class of the launch try recorded for a placement
// tried last because it is quarantined; its message is Quarantined.Reason.
// No launch was tried for it: it is not a failure.
const ClassSetAside = "set_aside"
