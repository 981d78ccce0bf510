package contract

import (
	"strings"
	"testing"
	"time"

	"sortie/controller/lifecycle"
)

func TestAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0 seconds"},
		{0, "0 seconds"},
		{time.Second, "1 second"},
		{59 * time.Second, "59 seconds"},
		{time.Minute, "1 minute"},
		{90 * time.Minute, "1 hour"},
		{47 * time.Hour, "47 hours"},
		{48 * time.Hour, "2 days"},
	} {
		if got := Age(tc.d); got != tc.want {
			t.Errorf("Age(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestElapsed(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	for _, tc := range []struct {
		start, end *time.Time
		want       string
	}{
		{nil, nil, "-"},
		{at(0), nil, "1m 30s"}, // running: until now
		{at(0), at(45 * time.Second), "45s"},
		{at(0), at(time.Hour + 5*time.Second), "1h 0m 5s"},
		{at(0), at(-time.Second), "0s"},
	} {
		if got := Elapsed(tc.start, tc.end, t0.Add(90*time.Second)); got != tc.want {
			t.Errorf("Elapsed(%v, %v) = %q, want %q", tc.start, tc.end, got, tc.want)
		}
	}
}

// An override reads the same wherever it is shown, an empty value as
// "(unset)".
func TestOverrideString(t *testing.T) {
	for _, tc := range []struct {
		o    Override
		want string
	}{
		{Override{Path: "envs.SEED", New: "7"}, "envs.SEED: (unset) → 7"},
		{Override{Path: "resources.memory", Old: "16", New: "32"}, "resources.memory: 16 → 32"},
		{Override{Path: "resources.use_spot", Old: "true"}, "resources.use_spot: true → (unset)"},
	} {
		if got := tc.o.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.o, got, tc.want)
		}
	}
}

// A known failure's task is named by its position and name, or either.
func TestFailureTaskLabel(t *testing.T) {
	one := 1
	for _, tc := range []struct {
		f    FailureView
		want string
	}{
		{FailureView{Task: &one, TaskName: "train"}, "1 (train)"},
		{FailureView{Task: &one}, "1"},
		{FailureView{TaskName: "train"}, "train"},
		{FailureView{}, "-"},
	} {
		if got := tc.f.TaskLabel(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}

// A deterministic known failure says it failed twice, and where.
func TestKnownFailureSaysDeterministic(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	three := 3
	f := &FailureView{JobID: 4, Status: lifecycle.Failed, ExitCodes: []*int{&three}, RecordedAt: now.Add(-time.Hour), Verdict: VerdictDeterministic,
		Evidence: []EvidenceView{{Attempt: 1, Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}, {Attempt: 2, Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b"}}}
	got := (&KnownFailureError{Failure: f, Now: now}).Error()
	want := "These inputs already failed in job 4 (exit code 3, twice: in aws/us-east-1/us-east-1a and in aws/us-east-1/us-east-1b, 1 hour ago)"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got  %q\nwant %q...", got, want)
	}
}
