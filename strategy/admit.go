package strategy

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Resource is one thing a limit counts: running jobs, nodes, vCPUs, or
// the GPUs of one type (GPU("A100")).
type Resource string

// The resources every job may count against besides GPUs.
const (
	Jobs  Resource = "jobs"
	Nodes Resource = "nodes"
	VCPUs Resource = "vcpus"
)

const gpuPrefix = "gpu:"

// GPU is the resource of the GPUs of one type, as tasks name them
// (accelerators: A100:8 is 8 of GPU("A100")).
func GPU(name string) Resource { return Resource(gpuPrefix + name) }

// Unit names r in a reason: "A100", "nodes", "vCPUs", "running jobs".
func (r Resource) Unit() string {
	switch r {
	case Jobs:
		return "running jobs"
	case Nodes:
		return "nodes"
	case VCPUs:
		return "vCPUs"
	case HourlyCost:
		return "an hour"
	}
	return strings.TrimPrefix(string(r), gpuPrefix)
}

// IsGPU says whether r counts GPUs.
func (r Resource) IsGPU() bool { return strings.HasPrefix(string(r), gpuPrefix) }

// Amounts are counts of resources: what a job asks for, what a user holds,
// or a limit (a resource missing from a limit is not limited).
type Amounts map[Resource]int

// Charge is what a job's running counts towards its user's fair share,
// per second: its GPUs when it asks for any, else its vCPUs when they are
// known, else its nodes (at least 1).
func (a Amounts) Charge() float64 {
	gpus := 0
	for r, n := range a {
		if r.IsGPU() {
			gpus += n
		}
	}
	switch {
	case gpus > 0:
		return float64(gpus)
	case a[VCPUs] > 0:
		return float64(a[VCPUs])
	}
	return float64(max(a[Nodes], 1))
}

func (a Amounts) add(b Amounts) {
	for r, n := range b {
		a[r] += n
	}
}

// Group is a named set of users who share one limit.
type Group struct {
	Name    string
	Members []string
	Limit   Amounts
}

// Limits are what admission holds running work to.
type Limits struct {
	// Server limits everyone's jobs together.
	Server Amounts
	// Users are each named user's own limit; DefaultUser is the limit of
	// every user not named there (nil: none).
	Users       map[string]Amounts
	DefaultUser Amounts
	// Groups each limit their members' jobs together; a user may be in
	// several, and each holds.
	Groups []Group
}

// UserLimit is the limit that holds user's own jobs: their own, else the
// default; nil for none.
func (l Limits) UserLimit(user string) Amounts {
	if own, ok := l.Users[user]; ok {
		return own
	}
	return l.DefaultUser
}

// Exceeded names the first limit ask alone is over, "" when it fits under
// every one of them: a job asking that much could never start. Limits are
// looked at server, user, then groups, resources in name order.
func (l Limits) Exceeded(user string, ask Amounts) string {
	return l.exceeded(user, ask, resources(ask))
}

// resources are the resources of a, in name order.
func resources(a Amounts) []Resource {
	if len(a) == 0 {
		return nil
	}
	rs := make([]Resource, 0, len(a))
	for r := range a {
		rs = append(rs, r)
	}
	if len(rs) > 1 {
		slices.Sort(rs)
	}
	return rs
}

// exceeded is Exceeded with ask's resources in order.
func (l Limits) exceeded(user string, ask Amounts, rs []Resource) string {
	check := func(limit Amounts, scope string) string {
		if len(limit) == 0 {
			return ""
		}
		for _, r := range rs {
			if max, ok := limit[r]; ok && ask[r] > max {
				return fmt.Sprintf("asks for %s %s, more than the %s of %s", r.count(ask[r]), r.Unit(), scope, r.count(max))
			}
		}
		return ""
	}
	if why := check(l.Server, "server limit"); why != "" {
		return why
	}
	if why := check(l.UserLimit(user), "user limit of "+user); why != "" {
		return why
	}
	for _, g := range l.Groups {
		if slices.Contains(g.Members, user) {
			if why := check(g.Limit, "limit of group "+g.Name); why != "" {
				return why
			}
		}
	}
	return ""
}

// WaitingJob is one PENDING job admission has not let start.
type WaitingJob struct {
	ID          int64
	User        string
	Priority    int
	SubmittedAt time.Time
	Ask         Amounts
}

// UseSpan is one stretch of past or present running: a job of User
// holding Charge from Start to End (nil while it runs).
type UseSpan struct {
	User   string
	Charge float64
	Start  time.Time
	End    *time.Time
}

// DecayedUse sums each user's use at now, in charge-seconds, each second
// of use weighing half as much every halfLife after it (a halfLife of 0 or
// less does not decay). Use after now counts nothing.
func DecayedUse(spans []UseSpan, now time.Time, halfLife time.Duration) map[string]float64 {
	out := map[string]float64{}
	for _, s := range spans {
		end := now
		if s.End != nil && s.End.Before(now) {
			end = *s.End
		}
		start := s.Start
		if !start.Before(end) {
			continue
		}
		if halfLife <= 0 {
			out[s.User] += s.Charge * end.Sub(start).Seconds()
			continue
		}
		// ∫ 2^(-(now-t)/h) dt from start to end, h in seconds.
		h := halfLife.Seconds()
		tau := h / math.Ln2
		out[s.User] += s.Charge * tau * (math.Exp2(-now.Sub(end).Seconds()/h) - math.Exp2(-now.Sub(start).Seconds()/h))
	}
	return out
}

// UseWindow is how far back use counts for a half-life: 10 half-lives,
// past which a second weighs less than a thousandth.
func UseWindow(halfLife time.Duration) time.Duration { return 10 * halfLife }

// AdmitInput is every fact admission decides on.
type AdmitInput struct {
	Now     time.Time
	Waiting []WaitingJob
	// Held is what each user's admitted, unfinished jobs hold.
	Held   map[string]Amounts
	Limits Limits
	// Weights are the users' fair-share weights; a user without one
	// weighs 1. A user of weight 2 is given twice the use of one of 1.
	Weights map[string]float64
	// Used is the past and present use of every user (UseSpan).
	Used     []UseSpan
	HalfLife time.Duration
}

// Placed is admission's answer for one waiting job.
type Placed struct {
	ID int64
	// Admit says the job may start now.
	Admit bool
	// Place is the job's place among the jobs that still wait, from 1;
	// 0 when admitted.
	Place int
	// Reason says why it waits: "waiting: alice holds 16 of 16 A100
	// (user limit)"; "" when admitted.
	Reason string
}

// Admit orders the waiting jobs and says which of them may start now.
//
// Order: higher Priority first; then the user with the least fair-share
// use (their decayed past use plus, for what they hold now and each job
// placed ahead of this one in the same order, the use of one mean life,
// halfLife/ln 2, of its charge; divided by their weight), so that one
// pass interleaves users instead of giving every free place to one; then
// the earlier submitted; then the lower id.
//
// Going down that order, a job is admitted when what it asks fits under
// the server's limit, its user's and each of its groups' beside what is
// held and what was admitted before it. A job does not pass one ahead of
// it that waits for a resource it also asks for under the same limit (no
// backfill: a job asking for many GPUs is not starved by small ones),
// but jobs asking for other resources, or of other users when the limit
// is a user's, go on. A job asking for more than a limit allows waits
// without holding anyone back. The answer is in order.
func Admit(in AdmitInput) []Placed {
	tau := 0.0
	if in.HalfLife > 0 {
		tau = in.HalfLife.Seconds() / math.Ln2
	} else {
		tau = time.Hour.Seconds()
	}
	use := DecayedUse(in.Used, in.Now, in.HalfLife)

	// Each user's jobs in their order, and the users in a heap by their
	// next job.
	byUser := map[string][]*WaitingJob{}
	for i := range in.Waiting {
		w := &in.Waiting[i]
		byUser[w.User] = append(byUser[w.User], w)
	}
	q := &userQueue{}
	for user, jobs := range byUser {
		slices.SortFunc(jobs, func(a, b *WaitingJob) int {
			return cmp.Or(cmp.Compare(b.Priority, a.Priority), a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.ID, b.ID))
		})
		weight := in.Weights[user]
		if weight <= 0 {
			weight = 1
		}
		share := use[user] + tau*in.Held[user].Charge()
		q.items = append(q.items, &userJobs{user: user, jobs: jobs, weight: weight, share: share, key: share / weight})
	}
	heap.Init(q)

	s := newScopes(in)
	out := make([]Placed, 0, len(in.Waiting))
	waiting := 0
	for q.Len() > 0 {
		u := q.items[0]
		j := u.jobs[0]
		p := Placed{ID: j.ID}
		charged := false
		rs := resources(j.Ask)
		if why := in.Limits.exceeded(j.User, j.Ask, rs); why != "" {
			p.Reason = "waiting: " + why + "; it cannot start until the limit is raised"
		} else if why, server := s.blocked(j, rs, waiting); why != "" {
			p.Reason, charged = why, server
		} else {
			p.Admit = true
			charged = true
			s.hold(j)
		}
		if !p.Admit {
			waiting++
			p.Place = waiting
		}
		out = append(out, p)
		u.jobs = u.jobs[1:]
		if charged {
			u.share += tau * j.Ask.Charge()
			u.key = u.share / u.weight
		}
		if len(u.jobs) == 0 {
			heap.Pop(q)
		} else {
			heap.Fix(q, 0)
		}
	}
	return out
}

// scopes is what each limit's holders hold during one pass of Admit, and
// the resources a job already waits for under it.
type scopes struct {
	limits  Limits
	server  Amounts
	users   map[string]Amounts
	groups  []Amounts
	inGroup map[string][]int // user -> indexes of their groups
	// Resources some job ahead waits for, server-wide, per user, per
	// group.
	serverWait map[Resource]bool
	userWait   map[string]map[Resource]bool
	groupWait  []map[Resource]bool
}

func newScopes(in AdmitInput) *scopes {
	s := &scopes{limits: in.Limits, server: Amounts{}, users: map[string]Amounts{}, inGroup: map[string][]int{},
		serverWait: map[Resource]bool{}, userWait: map[string]map[Resource]bool{}}
	s.groups = make([]Amounts, len(in.Limits.Groups))
	s.groupWait = make([]map[Resource]bool, len(in.Limits.Groups))
	for i, g := range in.Limits.Groups {
		s.groups[i] = Amounts{}
		s.groupWait[i] = map[Resource]bool{}
		for _, m := range g.Members {
			if !slices.Contains(s.inGroup[m], i) {
				s.inGroup[m] = append(s.inGroup[m], i)
			}
		}
	}
	for user, held := range in.Held {
		s.add(user, held)
	}
	return s
}

func (s *scopes) add(user string, a Amounts) {
	s.server.add(a)
	if s.users[user] == nil {
		s.users[user] = Amounts{}
	}
	s.users[user].add(a)
	for _, g := range s.inGroup[user] {
		s.groups[g].add(a)
	}
}

func (s *scopes) hold(j *WaitingJob) { s.add(j.User, j.Ask) }

// blocked says why j must wait, "" when it may start; server says the
// wait is for the server's limit (j is next in line for it). ahead is the
// number of jobs waiting ahead of j.
func (s *scopes) blocked(j *WaitingJob, rs []Resource, ahead int) (why string, server bool) {
	// The server's limit first: it is the one every job waits in line
	// for, and the reason says how many are ahead.
	for _, r := range rs {
		if j.Ask[r] <= 0 {
			continue
		}
		limit, ok := s.limits.Server[r]
		if !ok {
			continue
		}
		if s.serverWait[r] || s.server[r]+j.Ask[r] > limit {
			s.markServer(j, rs)
			return serverReason(r, s.server[r], limit, ahead), true
		}
	}
	if limit := s.limits.UserLimit(j.User); limit != nil {
		for _, r := range rs {
			max, ok := limit[r]
			if !ok || j.Ask[r] <= 0 {
				continue
			}
			held := s.users[j.User][r]
			if s.userWait[j.User][r] || held+j.Ask[r] > max {
				s.markUser(j, rs)
				return "waiting: " + j.User + " holds " + r.count(held) + " of " + r.count(max) + " " + r.Unit() + " (user limit)", false
			}
		}
	}
	for _, g := range s.inGroup[j.User] {
		limit := s.limits.Groups[g].Limit
		for _, r := range rs {
			max, ok := limit[r]
			if !ok || j.Ask[r] <= 0 {
				continue
			}
			held := s.groups[g][r]
			if s.groupWait[g][r] || held+j.Ask[r] > max {
				s.markGroup(g, j, rs)
				return "waiting: group " + s.limits.Groups[g].Name + " holds " + r.count(held) + " of " + r.count(max) + " " + r.Unit() + " (group limit)", false
			}
		}
	}
	return "", false
}

// markServer, markUser and markGroup record that j waits for each
// resource it asks for under that limit: no job after it passes it there.
func (s *scopes) markServer(j *WaitingJob, rs []Resource) {
	for _, r := range rs {
		if _, limited := s.limits.Server[r]; limited && j.Ask[r] > 0 {
			s.serverWait[r] = true
		}
	}
}

func (s *scopes) markUser(j *WaitingJob, rs []Resource) {
	w := s.userWait[j.User]
	if w == nil {
		w = map[Resource]bool{}
		s.userWait[j.User] = w
	}
	limit := s.limits.UserLimit(j.User)
	for _, r := range rs {
		if _, limited := limit[r]; limited && j.Ask[r] > 0 {
			w[r] = true
		}
	}
}

func (s *scopes) markGroup(g int, j *WaitingJob, rs []Resource) {
	for _, r := range rs {
		if _, limited := s.limits.Groups[g].Limit[r]; limited && j.Ask[r] > 0 {
			s.groupWait[g][r] = true
		}
	}
}

// serverReason says why a job waits for the server's limit of r.
func serverReason(r Resource, held, limit, ahead int) string {
	// Written without fmt: it is said of every job in a long queue.
	var what string
	switch {
	case r == Jobs:
		what = "waiting: the server runs " + strconv.Itoa(held) + " of " + strconv.Itoa(limit) + " jobs (server limit)"
	case held >= limit:
		what = "waiting: the server's " + r.count(limit) + " " + r.Unit() + " are in use"
	default:
		what = "waiting: " + r.count(held) + " of the server's " + r.count(limit) + " " + r.Unit() + " are in use"
	}
	switch ahead {
	case 0:
		return what + "; this job is next"
	case 1:
		return what + "; 1 job ahead of this one"
	}
	return what + "; " + strconv.Itoa(ahead) + " jobs ahead of this one"
}

// userJobs is one user's waiting jobs in their order, and the user's
// fair-share use so far.
type userJobs struct {
	user   string
	jobs   []*WaitingJob
	weight float64
	share  float64
	key    float64 // share / weight
}

// userQueue orders users by their next job: priority, weighted share,
// submission, id.
type userQueue struct{ items []*userJobs }

func (q *userQueue) Len() int { return len(q.items) }
func (q *userQueue) Less(i, k int) bool {
	a, b := q.items[i], q.items[k]
	ja, jb := a.jobs[0], b.jobs[0]
	// Compared in turn, not through cmp.Or: the heap asks this for every
	// job placed, and most pairs differ in priority or share.
	if ja.Priority != jb.Priority {
		return ja.Priority > jb.Priority
	}
	if a.key != b.key {
		return a.key < b.key
	}
	if c := ja.SubmittedAt.Compare(jb.SubmittedAt); c != 0 {
		return c < 0
	}
	return ja.ID < jb.ID
}
func (q *userQueue) Swap(i, k int) { q.items[i], q.items[k] = q.items[k], q.items[i] }
func (q *userQueue) Push(x any)    { q.items = append(q.items, x.(*userJobs)) }
func (q *userQueue) Pop() any {
	n := len(q.items)
	x := q.items[n-1]
	q.items = q.items[:n-1]
	return x
}
