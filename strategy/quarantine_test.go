package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/schema"
	"sortie/strategy/clocktest"
)

func TestQuarantine(t *testing.T) {
	clock := clocktest.New(time.Time{})
	now := clock.Now()
	za, zb := pl("aws", "us-east-1", "us-east-1a"), pl("aws", "us-east-1", "us-east-1b")
	code := func(c int) *int { return &c }
	lost := func(job int64, p schema.Placement, ago time.Duration) PlacementFailure {
		return PlacementFailure{Placement: p, JobID: job, Outcome: NodeLost, At: now.Add(-ago)}
	}
	setup := func(job int64, input string, c int, ago time.Duration) PlacementFailure {
		return PlacementFailure{Placement: za, JobID: job, InputKey: input, Outcome: SetupFailure, ExitCode: code(c), At: now.Add(-ago)}
	}
	flaky := func(job int64, input string, o Outcome, c int, ago time.Duration) PlacementFailure {
		return PlacementFailure{Placement: za, JobID: job, InputKey: input, Outcome: o, ExitCode: code(c), Flaky: true, At: now.Add(-ago)}
	}
	other := func(job int64, o Outcome) PlacementFailure {
		return PlacementFailure{Placement: za, JobID: job, Outcome: o, ExitCode: code(1), At: now}
	}
	def := DefaultQuarantine()
	type want struct {
		placement schema.Placement
		jobs      []int64
		until     time.Duration // from now
		cause     string
	}
	tests := []struct {
		name     string
		policy   QuarantinePolicy
		failures []PlacementFailure
		cleared  ClearedAt
		want     []want
	}{
		{"three jobs lose their node at once: set aside one half-life", def,
			[]PlacementFailure{lost(1, za, 0), lost(2, za, 0), lost(3, za, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 30 * time.Minute, "lost their node"}}},
		{"two jobs are not enough", def,
			[]PlacementFailure{lost(1, za, 0), lost(2, za, 0)}, nil, nil},
		{"one job failing three times is one job", def,
			[]PlacementFailure{lost(1, za, 0), lost(1, za, time.Minute), lost(1, za, 2*time.Minute), lost(2, za, 0)}, nil, nil},
		{"failures spread over other zones do not add up", def,
			[]PlacementFailure{lost(1, za, 0), lost(2, zb, 0), lost(3, za, 0)}, nil, nil},
		{"spread over 20 minutes: aside until the count falls to half the threshold", def,
			// weights 1 + 2^(-1/3) + 2^(-2/3) = 2.42366; 1.5 after 30*log2(2.42366/1.5) = 20.767 minutes
			[]PlacementFailure{lost(1, za, 20*time.Minute), lost(2, za, 10*time.Minute), lost(3, za, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 20*time.Minute + 46*time.Second + 6*time.Millisecond, "lost their node"}}},
		{"decayed: the same three failures 40 minutes on are no longer aside", def,
			[]PlacementFailure{lost(1, za, 60*time.Minute), lost(2, za, 50*time.Minute), lost(3, za, 40*time.Minute)}, nil, nil},
		{"three failures an hour apart never are", def,
			[]PlacementFailure{lost(1, za, 2*time.Hour), lost(2, za, time.Hour), lost(3, za, 0)}, nil, nil},
		{"more jobs keep it aside longer", def,
			// 6 at once: falls to 1.5 after two half-lives, when they leave the window
			[]PlacementFailure{lost(1, za, 0), lost(2, za, 0), lost(3, za, 0), lost(4, za, 0), lost(5, za, 0), lost(6, za, 0)}, nil,
			[]want{{za, []int64{6, 5, 4, 3, 2, 1}, 60 * time.Minute, "lost their node"}}},
		{"a count held up by several old jobs: under the threshold there", def,
			// 3 jobs 55 minutes ago and 2 just now: 2 + 3*2^(-55/30) = 2.84 >= 1.5,
			// but the third newest job leaves the window in 5 minutes
			[]PlacementFailure{lost(1, za, 55*time.Minute), lost(2, za, 55*time.Minute), lost(3, za, 55*time.Minute), lost(4, za, 0), lost(5, za, 0)}, nil,
			[]want{{za, []int64{5, 4, 3, 2, 1}, 5 * time.Minute, "lost their node"}}},
		{"recent failures hold it past the old ones' window", def,
			// 2 jobs 55 minutes ago and 3 just now: 3 + 2*2^(-55/30) = 3.56123;
			// 1.5 after 30*log2(3.56123/1.5) = 37.422 minutes, before the
			// third newest leaves the window (60 minutes)
			[]PlacementFailure{lost(1, za, 55*time.Minute), lost(2, za, 55*time.Minute), lost(3, za, 0), lost(4, za, 0), lost(5, za, 0)}, nil,
			[]want{{za, []int64{5, 4, 3, 2, 1}, 37*time.Minute + 25*time.Second + 344*time.Millisecond, "lost their node"}}},
		{"user failures, preemptions, timeouts and launch failures never count", def,
			[]PlacementFailure{other(1, UserFailure), other(2, Preempted), other(3, TimedOut), other(4, LaunchFailed), other(5, ControllerError)}, nil, nil},
		{"setup failing with one code for different inputs counts", def,
			[]PlacementFailure{setup(1, "k1", 7, 0), setup(2, "k2", 7, 0), setup(3, "k3", 7, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 30 * time.Minute, "failed setup with exit 7"}}},
		{"setup failing for one input is the input's", def,
			[]PlacementFailure{setup(1, "k1", 7, 0), setup(2, "k1", 7, 0), setup(3, "k1", 7, 0)}, nil, nil},
		{"setup failing with different codes is each input's", def,
			[]PlacementFailure{setup(1, "k1", 7, 0), setup(2, "k2", 8, 0), setup(3, "k3", 9, 0)}, nil, nil},
		{"setup failures with an unknown code do not count", def,
			[]PlacementFailure{{Placement: za, JobID: 1, InputKey: "a", Outcome: SetupFailure, At: now}, setup(2, "b", 7, 0), lost(3, za, 0)}, nil, nil},
		{"mixed causes are counted each", def,
			[]PlacementFailure{lost(1, za, 0), setup(2, "k1", 7, 0), setup(3, "k2", 7, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 30 * time.Minute, "failed (1 lost their node, 2 failed setup with exit 7)"}}},
		{"failures found flaky count for any inputs: three jobs set it aside", def,
			[]PlacementFailure{flaky(1, "k1", UserFailure, 3, 0), flaky(2, "k2", UserFailure, 4, 0), flaky(3, "k3", UserFailure, 3, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 30 * time.Minute, "failed flakily"}}},
		{"a flaky setup failure counts without another input failing the same way", def,
			[]PlacementFailure{flaky(1, "k1", SetupFailure, 7, 0), flaky(2, "k1", SetupFailure, 8, 0), flaky(3, "k1", UserFailure, 1, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 30 * time.Minute, "failed flakily"}}},
		{"two flaky jobs are not enough, nor is one job flaky three times", def,
			[]PlacementFailure{flaky(1, "k1", UserFailure, 3, 0), flaky(1, "k1", UserFailure, 3, time.Minute), flaky(1, "k1", UserFailure, 3, 2*time.Minute), flaky(2, "k2", UserFailure, 3, 0)}, nil, nil},
		{"flaky failures decay like the others", def,
			[]PlacementFailure{flaky(1, "k1", UserFailure, 3, 2*time.Hour), flaky(2, "k2", UserFailure, 3, time.Hour), flaky(3, "k3", UserFailure, 3, 0)}, nil, nil},
		{"flaky failures add up with lost nodes", def,
			[]PlacementFailure{lost(1, za, 0), flaky(2, "k1", UserFailure, 3, 0), flaky(3, "k2", UserFailure, 3, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 30 * time.Minute, "failed (1 lost their node, 2 failed flakily)"}}},
		{"cleared: failures up to the clear do not count", def,
			[]PlacementFailure{lost(1, za, 2*time.Minute), lost(2, za, time.Minute), lost(3, za, 0)},
			func(p schema.Placement) time.Time {
				if p == za {
					return now.Add(-time.Minute)
				}
				return time.Time{}
			}, nil},
		{"cloud names compare case-insensitively", def,
			[]PlacementFailure{lost(1, za, 0), lost(2, pl("AWS", "us-east-1", "us-east-1a"), 0), lost(3, za, 0)}, nil,
			[]want{{za, []int64{3, 2, 1}, 30 * time.Minute, "lost their node"}}},
		{"threshold 0 turns it off", QuarantinePolicy{Threshold: 0, HalfLife: time.Hour},
			[]PlacementFailure{lost(1, za, 0), lost(2, za, 0), lost(3, za, 0)}, nil, nil},
		{"threshold and half-life are the policy's", QuarantinePolicy{Threshold: 2, HalfLife: time.Hour},
			// 2 jobs, weights 1 and 2^(-1/2): 1.7071 >= 1; falls to 1 after 60*log2(1.70711) = 46.293 min
			[]PlacementFailure{lost(1, za, 30*time.Minute), lost(2, za, 0)}, nil,
			[]want{{za, []int64{2, 1}, 46*time.Minute + 17*time.Second + 592*time.Millisecond, "lost their node"}}},
		{"several placements come sorted", def,
			[]PlacementFailure{lost(1, zb, 0), lost(2, zb, 0), lost(3, zb, 0), lost(4, za, 0), lost(5, za, 0), lost(6, za, 0)}, nil,
			[]want{{za, []int64{6, 5, 4}, 30 * time.Minute, "lost their node"}, {zb, []int64{3, 2, 1}, 30 * time.Minute, "lost their node"}}},
		{"a failure stamped ahead of the clock weighs 1", def,
			[]PlacementFailure{lost(1, za, -time.Minute), lost(2, za, 0), lost(3, za, 0)}, nil,
			[]want{{za, []int64{1, 3, 2}, 30 * time.Minute, "lost their node"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Quarantine(tt.policy, tt.failures, tt.cleared, now)
			var gotW []want
			for _, q := range got {
				gotW = append(gotW, want{q.Placement, q.Jobs, q.Until.Sub(now).Round(time.Millisecond), q.Cause})
			}
			if diff := cmp.Diff(tt.want, gotW, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("Quarantine (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuarantineDecaysWithTheClock(t *testing.T) {
	clock := clocktest.New(time.Time{})
	za := pl("aws", "us-east-1", "us-east-1a")
	var fs []PlacementFailure
	for job := int64(1); job <= 3; job++ {
		fs = append(fs, PlacementFailure{Placement: za, JobID: job, Outcome: NodeLost, At: clock.Now()})
	}
	if got := Quarantine(DefaultQuarantine(), fs, nil, clock.Now()); len(got) != 1 {
		t.Fatalf("at the failures: %d quarantined, want 1", len(got))
	}
	clock.Advance(29 * time.Minute)
	got := Quarantine(DefaultQuarantine(), fs, nil, clock.Now())
	if len(got) != 1 || got[0].Weight < 1.5 || got[0].Weight > 1.6 {
		t.Fatalf("after 29m: %+v, want one with a weight just over 1.5", got)
	}
	clock.Advance(time.Minute)
	if got := Quarantine(DefaultQuarantine(), fs, nil, clock.Now()); len(got) != 0 {
		t.Fatalf("after 30m: %+v, want none", got)
	}
}

func TestQuarantinedReason(t *testing.T) {
	q := Quarantined{Placement: pl("aws", "us-east-1", "us-east-1a"), Jobs: []int64{3, 2, 1},
		Until: time.Date(2026, 1, 2, 14, 32, 10, 0, time.UTC), Cause: "lost their node"}
	want := "aws/us-east-1/us-east-1a set aside until 14:32 UTC: 3 jobs lost their node there"
	if got := q.Reason(); got != want {
		t.Errorf("Reason() = %q, want %q", got, want)
	}
}

func TestSetAside(t *testing.T) {
	a, b, c := pl("aws", "r1", "r1-a"), pl("aws", "r1", "r1-b"), pl("aws", "r2", "r2-a")
	cands := func(ps ...schema.Placement) []Candidate {
		var out []Candidate
		for _, p := range ps {
			out = append(out, Candidate{Placement: p})
		}
		return out
	}
	qa := Quarantined{Placement: a, Cause: "lost their node"}
	qc := Quarantined{Placement: c, Cause: "lost their node"}
	tests := []struct {
		name    string
		cands   []Candidate
		qs      []Quarantined
		want    []Candidate
		wantWhy []Quarantined
	}{
		{"nothing quarantined: order kept", cands(a, b, c), nil, cands(a, b, c), nil},
		{"a quarantined placement goes last", cands(a, b, c), []Quarantined{qa}, cands(b, c, a), []Quarantined{qa}},
		{"several keep their order among themselves", cands(c, a, b), []Quarantined{qa, qc}, cands(b, c, a), []Quarantined{qc, qa}},
		{"only quarantined ones left: still tried", cands(a, c), []Quarantined{qa, qc}, cands(a, c), []Quarantined{qa, qc}},
		{"a quarantine of a placement not among the candidates says nothing", cands(b), []Quarantined{qa}, cands(b), nil},
		{"cloud names compare case-insensitively", cands(pl("AWS", "r1", "r1-a"), b), []Quarantined{qa}, cands(b, pl("AWS", "r1", "r1-a")), []Quarantined{qa}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Candidate(nil), tt.cands...)
			got, why := SetAside(in, tt.qs)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWhy, why); diff != "" {
				t.Errorf("why (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.cands, in); diff != "" {
				t.Errorf("input modified (-want +got):\n%s", diff)
			}
		})
	}
}
