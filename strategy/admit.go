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
func (a Amounts) Charge() float64 { return charge(needsOf(a)) }

// charge is Charge of what a job asks for.
func charge(ns []need) float64 {
	gpus, vcpus, nodes := 0, 0, 0
	for _, x := range ns {
		switch {
		case x.r.IsGPU():
			gpus += x.n
		case x.r == VCPUs:
			vcpus = x.n
		case x.r == Nodes:
			nodes = x.n
		}
	}
	switch {
	case gpus > 0:
		return float64(gpus)
	case vcpus > 0:
		return float64(vcpus)
	}
	return float64(max(nodes, 1))
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
	return l.exceeded(user, needsOf(ask))
}

// exceeded is Exceeded of what a job asks for.
func (l Limits) exceeded(user string, ns []need) string {
	over := func(limit Amounts) (need, int, bool) {
		if len(limit) == 0 {
			return need{}, 0, false
		}
		for _, x := range ns {
			if max, ok := limit[x.r]; ok && x.n > max {
				return x, max, true
			}
		}
		return need{}, 0, false
	}
	say := func(x need, max int, scope string) string {
		return fmt.Sprintf("asks for %s %s, more than the %s of %s", x.r.count(x.n), x.r.Unit(), scope, x.r.count(max))
	}
	if x, max, ok := over(l.Server); ok {
		return say(x, max, "server limit")
	}
	if x, max, ok := over(l.UserLimit(user)); ok {
		return say(x, max, "user limit of "+user)
	}
	for _, g := range l.Groups {
		if slices.Contains(g.Members, user) {
			if x, max, ok := over(g.Limit); ok {
				return say(x, max, "limit of group "+g.Name)
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
	// Admitted are the jobs admitted (or started) that have not ended,
	// each counted in Held: those a waiting job may preempt.
	Admitted []AdmittedJob
	// Preempt lets a waiting job blocked by a limit take the place of
	// admitted jobs of lower priority (limits.preemption:
	// lower_priority); see preempt.go.
	Preempt bool
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
	// Preempt are the admitted jobs this waiting job asks to stop and
	// wait again, to make room for it (AdmitInput.Preempt); nil for none.
	Preempt []int64
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

	// Each job's ask read once: the resources it asks for in name order
	// and its charge. Each user's jobs in their order, and the users in a
	// heap by their next job.
	asks := make([]queued, len(in.Waiting))
	buf := make([]need, 0, 3*len(in.Waiting))
	byUser := map[string][]*queued{}
	for i := range in.Waiting {
		w := &in.Waiting[i]
		var ns []need
		ns, buf = appendNeeds(buf, w.Ask)
		asks[i] = queued{WaitingJob: w, needs: ns, charge: charge(ns)}
		byUser[w.User] = append(byUser[w.User], &asks[i])
	}
	q := &userQueue{}
	for user, jobs := range byUser {
		slices.SortFunc(jobs, func(a, b *queued) int {
			if a.Priority != b.Priority {
				return cmp.Compare(b.Priority, a.Priority)
			}
			if c := a.SubmittedAt.Compare(b.SubmittedAt); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		weight := in.Weights[user]
		if weight <= 0 {
			weight = 1
		}
		share := use[user] + tau*in.Held[user].Charge()
		u := &userJobs{user: user, jobs: jobs, weight: weight, share: share, key: share / weight}
		u.next()
		q.items = append(q.items, u)
	}
	heap.Init(q)

	s := newScopes(in)
	s.text.Grow(96 * len(in.Waiting))
	s.said = make([]said, 0, len(in.Waiting))
	var pr *preemptor
	if in.Preempt {
		pr = newPreemptor(in.Admitted)
	}
	out := make([]Placed, 0, len(in.Waiting))
	waiting := 0
	for q.Len() > 0 {
		u := q.items[0]
		j := u.jobs[0]
		p := Placed{ID: j.ID}
		charged := false
		// Whether a job ahead already waits for what j asks, before
		// blocked marks j's own wait: j then takes no one's place.
		behind := pr != nil && s.queued(j)
		if why := u.exceeded(in.Limits, j.needs); why != "" {
			p.Reason = "waiting: " + why + "; it cannot start until the limit is raised"
		} else if why, server := s.blocked(j, waiting); server || why != "" {
			p.Reason, charged = why, server
			preempting := false
			if pr != nil {
				if why, victims := pr.preempt(s, j, behind); why != "" {
					p.Reason, p.Preempt, preempting = why, victims, true
				}
			}
			if server && !preempting {
				// The reason is the last one written to s.text.
				s.said = append(s.said, said{len(out), s.from, s.text.Len()})
			}
		} else {
			p.Admit = true
			charged = true
			s.add(j.User, j.needs)
		}
		if !p.Admit {
			waiting++
			p.Place = waiting
		}
		out = append(out, p)
		u.jobs = u.jobs[1:]
		if charged {
			u.share += tau * j.charge
			u.key = u.share / u.weight
		}
		if len(u.jobs) == 0 {
			heap.Pop(q)
		} else {
			u.next()
			heap.Fix(q, 0)
		}
	}
	// The server's reasons, written one after the other, become strings
	// at once: one allocation, not one a waiting job.
	text := s.text.String()
	for _, r := range s.said {
		out[r.out].Reason = text[r.from:r.to]
	}
	return out
}

// said is where in scopes.text the reason of out[out] is.
type said struct{ out, from, to int }

// need is an amount of one resource a job asks for.
type need struct {
	r Resource
	n int
}

// needsOf is what a asks for, more than none of, in resource name order.
func needsOf(a Amounts) []need {
	ns, _ := appendNeeds(nil, a)
	return ns
}

// appendNeeds appends needsOf(a) to buf and returns them and buf.
func appendNeeds(buf []need, a Amounts) (ns, grown []need) {
	from := len(buf)
	for r, n := range a {
		if n > 0 {
			buf = append(buf, need{r, n})
		}
	}
	ns = buf[from:len(buf):len(buf)]
	if len(ns) > 1 {
		slices.SortFunc(ns, func(x, y need) int { return strings.Compare(string(x.r), string(y.r)) })
	}
	return ns, buf
}

// queued is a waiting job with its ask read once.
type queued struct {
	*WaitingJob
	needs  []need
	charge float64
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
	// reasons are the server's reasons said so far, by resource, held and
	// limit, without the count of jobs ahead.
	reasons map[serverWait]string
	// The last of them, as most jobs in a row wait alike.
	last     serverWait
	lastWhat string
	// text holds the server's reasons of the jobs that wait for it, in
	// turn; the last one starts at from. said is where each one is.
	text strings.Builder
	from int
	said []said
}

// serverWait is what a server reason says before the jobs ahead.
type serverWait struct {
	r            Resource
	held, limits int
}

func newScopes(in AdmitInput) *scopes {
	s := &scopes{limits: in.Limits, server: Amounts{}, users: map[string]Amounts{}, inGroup: map[string][]int{},
		serverWait: map[Resource]bool{}, userWait: map[string]map[Resource]bool{}, reasons: map[serverWait]string{}}
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
		s.add(user, needsOf(held))
	}
	return s
}

// add counts ns as held by user.
func (s *scopes) add(user string, ns []need) {
	held := s.users[user]
	if held == nil {
		held = Amounts{}
		s.users[user] = held
	}
	groups := s.inGroup[user]
	for _, x := range ns {
		s.server[x.r] += x.n
		held[x.r] += x.n
		for _, g := range groups {
			s.groups[g][x.r] += x.n
		}
	}
}

// blocked says why j must wait, "" when it may start; server says the
// wait is for the server's limit (j is next in line for it), and then the
// reason is not returned but written at the end of s.text, from s.from.
// ahead is the number of jobs waiting ahead of j.
func (s *scopes) blocked(j *queued, ahead int) (why string, server bool) {
	// The server's limit first: it is the one every job waits in line
	// for, and the reason says how many are ahead.
	if len(s.limits.Server) > 0 {
		for _, x := range j.needs {
			limit, ok := s.limits.Server[x.r]
			if !ok {
				continue
			}
			if s.serverWait[x.r] || s.server[x.r]+x.n > limit {
				markWait(s.serverWait, s.limits.Server, j.needs)
				s.serverReason(x.r, s.server[x.r], limit, ahead)
				return "", true
			}
		}
	}
	if limit := s.limits.UserLimit(j.User); len(limit) > 0 {
		for _, x := range j.needs {
			max, ok := limit[x.r]
			if !ok {
				continue
			}
			held := s.users[j.User][x.r]
			if s.userWait[j.User][x.r] || held+x.n > max {
				w := s.userWait[j.User]
				if w == nil {
					w = map[Resource]bool{}
					s.userWait[j.User] = w
				}
				markWait(w, limit, j.needs)
				return "waiting: " + j.User + " holds " + x.r.count(held) + " of " + x.r.count(max) + " " + x.r.Unit() + " (user limit)", false
			}
		}
	}
	for _, g := range s.inGroup[j.User] {
		limit := s.limits.Groups[g].Limit
		for _, x := range j.needs {
			max, ok := limit[x.r]
			if !ok {
				continue
			}
			held := s.groups[g][x.r]
			if s.groupWait[g][x.r] || held+x.n > max {
				markWait(s.groupWait[g], limit, j.needs)
				return "waiting: group " + s.limits.Groups[g].Name + " holds " + x.r.count(held) + " of " + x.r.count(max) + " " + x.r.Unit() + " (group limit)", false
			}
		}
	}
	return "", false
}

// markWait records in wait that a job waits for each resource of ns the
// limit counts: no job after it passes it there.
func markWait(wait map[Resource]bool, limit Amounts, ns []need) {
	for _, x := range ns {
		if _, limited := limit[x.r]; limited {
			wait[x.r] = true
		}
	}
}

// serverReason writes to s.text why a job waits for the server's limit
// of r, with ahead jobs ahead of it.
func (s *scopes) serverReason(r Resource, held, limit, ahead int) {
	k := serverWait{r, held, limit}
	what := s.lastWhat
	if k != s.last || what == "" {
		var ok bool
		if what, ok = s.reasons[k]; !ok {
			what = serverWaitWhat(r, held, limit)
			s.reasons[k] = what
		}
		s.last, s.lastWhat = k, what
	}
	s.from = s.text.Len()
	s.text.WriteString(what)
	switch ahead {
	case 0:
		s.text.WriteString("; this job is next")
	case 1:
		s.text.WriteString("; 1 job ahead of this one")
	default:
		var n [20]byte
		s.text.WriteString("; ")
		s.text.Write(strconv.AppendInt(n[:0], int64(ahead), 10))
		s.text.WriteString(" jobs ahead of this one")
	}
}

// serverWaitWhat says why a job waits for the server's limit of r, but
// not how many jobs are ahead of it.
func serverWaitWhat(r Resource, held, limit int) string {
	switch {
	case r == Jobs:
		return "waiting: the server runs " + strconv.Itoa(held) + " of " + strconv.Itoa(limit) + " jobs (server limit)"
	case held >= limit:
		return "waiting: the server's " + r.count(limit) + " " + r.Unit() + " are in use"
	}
	return "waiting: " + r.count(held) + " of the server's " + r.count(limit) + " " + r.Unit() + " are in use"
}

// userJobs is one user's waiting jobs in their order, and the user's
// fair-share use so far.
type userJobs struct {
	user   string
	jobs   []*queued
	weight float64
	share  float64
	key    float64 // share / weight
	// The next job's priority and submission, kept here for the heap.
	priority  int
	submitted time.Time
	id        int64
	// The last ask exceeded was asked of, and its answer.
	asked []need
	over  string
}

// exceeded is Limits.exceeded for the user's job asking ns, kept for the
// next job asking the same.
func (u *userJobs) exceeded(l Limits, ns []need) string {
	if u.asked == nil || !slices.Equal(u.asked, ns) {
		u.asked, u.over = ns, l.exceeded(u.user, ns)
	}
	return u.over
}

// next reads the user's next job into the fields the heap compares.
func (u *userJobs) next() {
	j := u.jobs[0]
	u.priority, u.submitted, u.id = j.Priority, j.SubmittedAt, j.ID
}

// userQueue orders users by their next job: priority, weighted share,
// submission, id.
type userQueue struct{ items []*userJobs }

func (q *userQueue) Len() int { return len(q.items) }
func (q *userQueue) Less(i, k int) bool {
	a, b := q.items[i], q.items[k]
	// Compared in turn, not through cmp.Or: the heap asks this for every
	// job placed, and most pairs differ in priority or share.
	if a.priority != b.priority {
		return a.priority > b.priority
	}
	if a.key != b.key {
		return a.key < b.key
	}
	if c := a.submitted.Compare(b.submitted); c != 0 {
		return c < 0
	}
	return a.id < b.id
}
func (q *userQueue) Swap(i, k int) { q.items[i], q.items[k] = q.items[k], q.items[i] }
func (q *userQueue) Push(x any)    { q.items = append(q.items, x.(*userJobs)) }
func (q *userQueue) Pop() any {
	n := len(q.items)
	x := q.items[n-1]
	q.items = q.items[:n-1]
	return x
}
