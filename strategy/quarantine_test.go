package strategy

import (
	"strings"
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
			func(k QuarantineKey) time.Time {
				if k == (QuarantineKey{Placement: za}) {
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

func TestQuarantineLevels(t *testing.T) {
	clock := clocktest.New(time.Time{})
	now := clock.Now()
	za, zb := pl("aws", "us-east-1", "us-east-1a"), pl("aws", "us-east-1", "us-east-1b")
	ns := pl("kubernetes", "prod", "ml")
	lost := func(job int64, p schema.Placement, typ string) PlacementFailure {
		return PlacementFailure{Placement: p, InstanceType: typ, JobID: job, Outcome: NodeLost, At: now}
	}
	onNode := func(job int64, zone, host string) PlacementFailure {
		return PlacementFailure{Placement: pl("kubernetes", "prod", zone), Host: host, JobID: job, Outcome: NodeLost, At: now}
	}
	code := func(c int) *int { return &c }
	typA := QuarantineKey{Placement: za, InstanceType: "p4d.24xlarge"}
	typB := QuarantineKey{Placement: zb, InstanceType: "p4d.24xlarge"}
	node7 := QuarantineKey{Placement: schema.Placement{Cloud: "kubernetes", Region: "prod"}, Host: "gpu-7"}
	def := DefaultQuarantine()
	tests := []struct {
		name     string
		failures []PlacementFailure
		cleared  ClearedAt
		want     []QuarantineKey
	}{
		{"three jobs on one type in a zone: that type there, not the zone",
			[]PlacementFailure{lost(1, za, "p4d.24xlarge"), lost(2, za, "p4d.24xlarge"), lost(3, za, "p4d.24xlarge")}, nil,
			[]QuarantineKey{typA}},
		{"three jobs on different types in a zone: the zone, not its types",
			[]PlacementFailure{lost(1, za, "p4d.24xlarge"), lost(2, za, "p4d.24xlarge"), lost(3, za, "m6i.large"), lost(4, za, "p4d.24xlarge")}, nil,
			[]QuarantineKey{{Placement: za}}},
		{"jobs that asked by CPUs (no type) blame the zone",
			[]PlacementFailure{lost(1, za, ""), lost(2, za, ""), lost(3, za, "")}, nil,
			[]QuarantineKey{{Placement: za}}},
		{"one type failing in two zones: each zone's own",
			[]PlacementFailure{lost(1, za, "p4d.24xlarge"), lost(2, za, "p4d.24xlarge"), lost(3, za, "p4d.24xlarge"),
				lost(4, zb, "p4d.24xlarge"), lost(5, zb, "p4d.24xlarge"), lost(6, zb, "p4d.24xlarge")}, nil,
			[]QuarantineKey{typA, typB}},
		{"a type cleared no longer counts",
			[]PlacementFailure{lost(1, za, "p4d.24xlarge"), lost(2, za, "p4d.24xlarge"), lost(3, za, "p4d.24xlarge")},
			func(k QuarantineKey) time.Time {
				if k == typA {
					return now
				}
				return time.Time{}
			},
			// The zone still counts the three jobs, all on the type cleared.
			nil},
		{"the type's failures spread over zones: neither zone, nor the type",
			[]PlacementFailure{lost(1, za, "p4d.24xlarge"), lost(2, zb, "p4d.24xlarge"), lost(3, za, "p4d.24xlarge")}, nil, nil},
		{"a zone cleared clears its types",
			[]PlacementFailure{lost(1, za, "p4d.24xlarge"), lost(2, za, "p4d.24xlarge"), lost(3, za, "p4d.24xlarge")},
			func(k QuarantineKey) time.Time {
				if k == (QuarantineKey{Placement: za}) {
					return now
				}
				return time.Time{}
			}, nil},
		{"three jobs on a Kubernetes node, in any namespaces: the node, not the namespaces",
			[]PlacementFailure{onNode(1, "ml", "gpu-7"), onNode(2, "team-b", "gpu-7"), onNode(3, "ml", "gpu-7")}, nil,
			[]QuarantineKey{node7}},
		{"three jobs on three nodes of one namespace: nothing",
			[]PlacementFailure{onNode(1, "ml", "gpu-1"), onNode(2, "ml", "gpu-2"), onNode(3, "ml", "gpu-3")}, nil, nil},
		{"pods on several nodes (no host) count against the namespace",
			[]PlacementFailure{lost(1, ns, ""), lost(2, ns, ""), lost(3, ns, "")}, nil,
			[]QuarantineKey{{Placement: ns}}},
		{"a node cleared no longer counts",
			[]PlacementFailure{onNode(1, "ml", "gpu-7"), onNode(2, "ml", "gpu-7"), onNode(3, "ml", "gpu-7")},
			func(k QuarantineKey) time.Time {
				if k == node7 {
					return now
				}
				return time.Time{}
			}, nil},
		{"setup failing alike for different inputs on one type counts against the type; two types lost in a zone, the zone",
			[]PlacementFailure{
				{Placement: za, InstanceType: "p4d.24xlarge", JobID: 1, InputKey: "k1", Outcome: SetupFailure, ExitCode: code(7), At: now},
				{Placement: za, InstanceType: "p4d.24xlarge", JobID: 2, InputKey: "k2", Outcome: SetupFailure, ExitCode: code(7), At: now},
				{Placement: za, InstanceType: "p4d.24xlarge", JobID: 3, InputKey: "k3", Outcome: SetupFailure, ExitCode: code(7), At: now},
				lost(4, zb, "p4d.24xlarge"), lost(5, zb, "p4d.24xlarge"), lost(6, zb, "m6i.large")}, nil,
			[]QuarantineKey{typA, {Placement: zb}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []QuarantineKey
			for _, q := range Quarantine(def, tt.failures, tt.cleared, now) {
				got = append(got, q.Key())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Quarantine (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuarantineKeyText(t *testing.T) {
	tests := []struct {
		text    string
		key     QuarantineKey
		level   string
		reason  string
		wantErr bool
	}{
		{"aws/us-east-1/us-east-1a", QuarantineKey{Placement: pl("aws", "us-east-1", "us-east-1a")}, LevelZone,
			"aws/us-east-1/us-east-1a set aside", false},
		{"AWS/us-east-1/us-east-1a/type=p4d.24xlarge", QuarantineKey{Placement: pl("aws", "us-east-1", "us-east-1a"), InstanceType: "p4d.24xlarge"}, LevelInstanceType,
			"p4d.24xlarge in aws/us-east-1/us-east-1a set aside", false},
		{"kubernetes/prod/node=gpu-7", QuarantineKey{Placement: schema.Placement{Cloud: "kubernetes", Region: "prod"}, Host: "gpu-7"}, LevelNode,
			"node gpu-7 of kubernetes/prod set aside", false},
		{"aws/us-east-1", QuarantineKey{}, "", "", true},
		{"aws//us-east-1a", QuarantineKey{}, "", "", true},
		{"aws/us-east-1/us-east-1a/type=", QuarantineKey{}, "", "", true},
		{"kubernetes/prod/ml/node=gpu-7", QuarantineKey{}, "", "", true},
		{"kubernetes/prod/node=", QuarantineKey{}, "", "", true},
		{"aws/us-east-1/us-east-1a/m6i.large", QuarantineKey{}, "", "", true},
		{"aws/us-east-1/zone=a", QuarantineKey{}, "", "", true},
	}
	for _, tt := range tests {
		k, err := ParseQuarantineKey(tt.text)
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "cloud/region/zone/type=TYPE") {
				t.Errorf("ParseQuarantineKey(%q) = %+v, %v; want an error saying the forms", tt.text, k, err)
			}
			continue
		}
		if err != nil || k != tt.key {
			t.Errorf("ParseQuarantineKey(%q) = %+v, %v; want %+v", tt.text, k, err, tt.key)
			continue
		}
		if k.Level() != tt.level || !strings.EqualFold(k.String(), tt.text) {
			t.Errorf("%q: level %s, String %q", tt.text, k.Level(), k.String())
		}
		q := Quarantined{Placement: k.Placement, InstanceType: k.InstanceType, Host: k.Host, Jobs: []int64{1, 2, 3},
			Until: time.Date(2026, 1, 2, 14, 32, 0, 0, time.UTC), Cause: "lost their node"}
		if want := tt.reason + " until 14:32 UTC: 3 jobs lost their node there"; q.Reason() != want {
			t.Errorf("%q: Reason %q, want %q", tt.text, q.Reason(), want)
		}
	}
}

func TestSetAsideLevels(t *testing.T) {
	a, b := pl("aws", "r1", "r1-a"), pl("aws", "r1", "r1-b")
	typed := func(p schema.Placement, typ string) Candidate {
		return Candidate{Placement: p, Resources: schema.Resources{InstanceType: typ}}
	}
	qType := Quarantined{Placement: a, InstanceType: "p4d.24xlarge"}
	qNode := Quarantined{Placement: schema.Placement{Cloud: "kubernetes", Region: "prod"}, Host: "gpu-7"}
	qNode2 := Quarantined{Placement: schema.Placement{Cloud: "kubernetes", Region: "prod"}, Host: "gpu-2"}
	qOther := Quarantined{Placement: schema.Placement{Cloud: "kubernetes", Region: "staging"}, Host: "gpu-1"}
	cands := []Candidate{typed(a, "p4d.24xlarge"), typed(a, "p5.48xlarge"), typed(b, "p4d.24xlarge")}
	got, why := SetAside(cands, []Quarantined{qType})
	want := []Candidate{typed(a, "p5.48xlarge"), typed(b, "p4d.24xlarge"), typed(a, "p4d.24xlarge")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a type set aside in a zone (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Quarantined{qType}, why); diff != "" {
		t.Errorf("why (-want +got):\n%s", diff)
	}

	k8s := []Candidate{{Placement: pl("kubernetes", "prod", "ml")}, {Placement: pl("kubernetes", "prod", "team-b")}}
	got, why = SetAside(k8s, []Quarantined{qNode, qOther, qNode2})
	if diff := cmp.Diff(k8s, got); diff != "" {
		t.Errorf("a node set aside moves no namespace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Quarantined{qNode, qNode2}, why); diff != "" {
		t.Errorf("why of nodes: the ones of the candidates' cluster (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpu-2", "gpu-7"}, AvoidHosts(k8s[1], []Quarantined{qNode, qOther, qNode2, qType})); diff != "" {
		t.Errorf("AvoidHosts (-want +got):\n%s", diff)
	}
	if got := AvoidHosts(cands[0], []Quarantined{qNode}); got != nil {
		t.Errorf("AvoidHosts of another cloud's candidate = %v, want none", got)
	}
}
