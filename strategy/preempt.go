package strategy

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AdmittedJob is a job admission let start (or one that started before
// admission existed) that has not ended: what it holds, and whether it
// is being stopped to make room for a waiting job.
type AdmittedJob struct {
	ID         int64
	User       string
	Priority   int
	Ask        Amounts
	AdmittedAt time.Time
	// YieldFor is the waiting job it was asked to make room for: it is
	// being stopped and holds its ask until it has; 0 when none.
	YieldFor int64
	// Cancelling says a cancel of it was asked for: it frees its place
	// anyway, and is nobody's victim.
	Cancelling bool
}

// HeldBy sums what admitted jobs hold, by user: AdmitInput.Held.
func HeldBy(admitted []AdmittedJob) map[string]Amounts {
	out := map[string]Amounts{}
	for _, a := range admitted {
		if out[a.User] == nil {
			out[a.User] = Amounts{}
		}
		for r, n := range a.Ask {
			out[a.User][r] += n
		}
	}
	return out
}

// preemptor is what one pass of Admit knows of the jobs it may preempt.
type preemptor struct {
	// candidates are the admitted jobs not being stopped, in the order
	// they are taken: lowest priority first, then the most recently
	// admitted (the least work lost), then the higher id.
	candidates []*AdmittedJob
	// taken are the jobs this pass already asked to yield.
	taken map[int64]bool
	// yielding are, by the waiting job they make room for, the jobs
	// being stopped since an earlier pass.
	yielding map[int64][]*AdmittedJob
}

func newPreemptor(admitted []AdmittedJob) *preemptor {
	p := &preemptor{taken: map[int64]bool{}, yielding: map[int64][]*AdmittedJob{}}
	for i := range admitted {
		a := &admitted[i]
		if a.YieldFor != 0 {
			// Being stopped for a.YieldFor (or cancelled meanwhile): it
			// ends either way, and that job waits for it.
			p.yielding[a.YieldFor] = append(p.yielding[a.YieldFor], a)
			continue
		}
		if a.Cancelling {
			continue
		}
		p.candidates = append(p.candidates, a)
	}
	slices.SortFunc(p.candidates, func(a, b *AdmittedJob) int {
		return cmp.Or(cmp.Compare(a.Priority, b.Priority), b.AdmittedAt.Compare(a.AdmittedAt), cmp.Compare(b.ID, a.ID))
	})
	return p
}

// shortfall is one limit a waiting job is over: scope (-1 the server's,
// -2 its user's, else the index of a group) and resource, with how much
// must be freed there.
type shortfall struct {
	scope int
	r     Resource
	short int
}

const (
	scopeServer = -1
	scopeUser   = -2
)

// preempt is preemption for waiting job j, which blocked found must wait
// (its wait already marked): the reason j waits and the jobs it asks to
// yield now, or "" when it does not preempt.
//
// j preempts only when a limit's room is what it waits for: not when it
// waits behind another job for the same room (behind), which goes first.
// While jobs asked to yield for j on an earlier pass are still being
// stopped, j asks nobody new and the reason names those. Else the
// candidates are the admitted jobs of strictly lower priority, not being
// stopped, cancelled nor taken by a job before j in this pass, that hold some of a
// resource j is short of under a limit that counts them (any job for the
// server's limit, j's user's for the user limit, a member's for a group
// limit). They are taken lowest priority first, then the most recently
// admitted, until j fits under every limit; then each taken job but the
// last is given back, latest taken first, if j still fits without it. If
// all candidates together would not make room, nobody is preempted.
func (p *preemptor) preempt(s *scopes, j *queued, behind bool) (string, []int64) {
	ys := p.yielding[j.ID]
	if len(ys) == 0 && behind {
		return "", nil // most of a long queue: said before anything is counted
	}
	needs := s.shortfalls(j)
	if len(ys) > 0 {
		return preemptReason(ys, s, j, needs), nil
	}
	if len(needs) == 0 {
		return "", nil
	}
	counts := func(a *AdmittedJob, n shortfall) bool {
		if a.Ask[n.r] <= 0 {
			return false
		}
		switch n.scope {
		case scopeServer:
			return true
		case scopeUser:
			return a.User == j.User
		}
		return slices.Contains(s.inGroup[a.User], n.scope)
	}
	freed := make([]int, len(needs))
	fits := func() bool {
		for i, n := range needs {
			if freed[i] < n.short {
				return false
			}
		}
		return true
	}
	free := func(a *AdmittedJob, sign int) {
		for i, n := range needs {
			if counts(a, n) {
				freed[i] += sign * a.Ask[n.r]
			}
		}
	}
	var victims []*AdmittedJob
	for _, a := range p.candidates {
		if a.Priority >= j.Priority {
			break // sorted: none after it is lower
		}
		if p.taken[a.ID] || !slices.ContainsFunc(needs, func(n shortfall) bool { return counts(a, n) }) {
			continue
		}
		victims = append(victims, a)
		free(a, 1)
		if fits() {
			break
		}
	}
	if !fits() {
		return "", nil
	}
	// Give back those not needed after all, keeping the later taken
	// (lower priority, less work lost) ones that make the room.
	for i := len(victims) - 2; i >= 0; i-- {
		free(victims[i], -1)
		if fits() {
			victims = slices.Delete(victims, i, i+1)
			continue
		}
		free(victims[i], 1)
	}
	ids := make([]int64, len(victims))
	for i, a := range victims {
		p.taken[a.ID] = true
		ids[i] = a.ID
	}
	return preemptReason(victims, s, j, needs), ids
}

// shortfalls are the limits j is over beside what is held now, and by
// how much, in the order blocked looks at them.
func (s *scopes) shortfalls(j *queued) []shortfall {
	var out []shortfall
	over := func(scope int, limit, held Amounts) {
		for _, x := range j.needs {
			max, ok := limit[x.r]
			if !ok {
				continue
			}
			if short := held[x.r] + x.n - max; short > 0 {
				out = append(out, shortfall{scope: scope, r: x.r, short: short})
			}
		}
	}
	over(scopeServer, s.limits.Server, s.server)
	if limit := s.limits.UserLimit(j.User); limit != nil {
		over(scopeUser, limit, s.users[j.User])
	}
	for _, g := range s.inGroup[j.User] {
		over(g, s.limits.Groups[g].Limit, s.groups[g])
	}
	return out
}

// queued says whether a job before j in this pass waits for a resource j
// asks for under a limit that holds j: j then waits behind it.
func (s *scopes) queued(j *queued) bool {
	for _, x := range j.needs {
		r := x.r
		if s.serverWait[r] {
			return true
		}
		if _, limited := s.limits.UserLimit(j.User)[r]; limited && s.userWait[j.User][r] {
			return true
		}
		for _, g := range s.inGroup[j.User] {
			if _, limited := s.limits.Groups[g].Limit[r]; limited && s.groupWait[g][r] {
				return true
			}
		}
	}
	return false
}

// preemptReason says that j waits for victims to stop: "waiting:
// preempting job 12 (priority 100) for room under the server limit".
func preemptReason(victims []*AdmittedJob, s *scopes, j *queued, needs []shortfall) string {
	var b strings.Builder
	b.WriteString("waiting: preempting job")
	if len(victims) > 1 {
		b.WriteString("s")
	}
	for i, a := range victims {
		switch {
		case i == 0:
			b.WriteString(" ")
		case i == len(victims)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(a.ID, 10) + " (priority " + strconv.Itoa(a.Priority) + ")")
	}
	var under []string
	for _, n := range needs {
		var what string
		switch n.scope {
		case scopeServer:
			what = "the server limit"
		case scopeUser:
			what = j.User + "'s user limit"
		default:
			what = "the limit of group " + s.limits.Groups[n.scope].Name
		}
		if !slices.Contains(under, what) {
			under = append(under, what)
		}
	}
	if len(under) > 0 {
		b.WriteString(" for room under " + strings.Join(under, " and "))
	}
	return b.String()
}
