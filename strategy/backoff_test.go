package strategy

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func fixed(f float64) func() float64 { return func() float64 { return f } }

func TestBackoffDelay(t *testing.T) {
	k8s := Backoff{Initial: 10 * time.Second, Max: 10 * time.Minute, Factor: 2}
	tests := []struct {
		name string
		b    Backoff
		n    int
		rnd  func() float64
		want time.Duration
	}{
		{"no retry yet waits nothing", k8s, 0, nil, 0},
		{"negative n waits nothing", k8s, -5, nil, 0},
		{"first retry waits Initial", k8s, 1, nil, 10 * time.Second},
		{"second retry doubles", k8s, 2, nil, 20 * time.Second},
		{"sixth retry", k8s, 6, nil, 320 * time.Second},
		{"seventh retry reaches the cap", k8s, 7, nil, 10 * time.Minute},
		{"far past the cap", k8s, 1000, nil, 10 * time.Minute},
		{"max int n", k8s, math.MaxInt, nil, 10 * time.Minute},
		{"zero Initial means no wait", Backoff{Max: time.Minute, Factor: 2}, 5, nil, 0},
		{"zero Factor means constant", Backoff{Initial: time.Second, Max: time.Minute}, 9, nil, time.Second},
		{"Factor below 1 means constant", Backoff{Initial: time.Second, Max: time.Minute, Factor: 0.5}, 9, nil, time.Second},
		{"NaN Factor means constant", Backoff{Initial: time.Second, Max: time.Minute, Factor: math.NaN()}, 9, nil, time.Second},
		{"infinite Factor hits the cap", Backoff{Initial: time.Second, Max: time.Minute, Factor: math.Inf(1)}, 2, nil, time.Minute},
		{"Initial above Max is capped", Backoff{Initial: time.Hour, Max: time.Minute, Factor: 2}, 1, nil, time.Minute},
		{"zero Max is uncapped", Backoff{Initial: time.Second, Factor: 2}, 21, nil, time.Duration(1<<20) * time.Second},
		{"zero Max saturates at the largest duration", Backoff{Initial: time.Second, Factor: 2}, 500, nil, time.Duration(math.MaxInt64)},
		{"fractional factor", Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute, Factor: 1.6}, 3, nil, 25600 * time.Millisecond},
		{"jitter takes off at most its fraction", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: 0.5}, 1, fixed(0.5), 7500 * time.Millisecond},
		{"jitter with rnd 0 takes nothing off", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: 0.5}, 2, fixed(0), 20 * time.Second},
		{"jitter applies at the cap too", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: 0.5}, 99, fixed(0.5), 45 * time.Second},
		{"nil rnd means no jitter", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: 0.5}, 1, nil, 10 * time.Second},
		{"jitter above 1 is clamped", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: 7}, 1, fixed(0.25), 7500 * time.Millisecond},
		{"negative jitter is none", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: -1}, 1, fixed(0.9), 10 * time.Second},
		{"rnd out of range is clamped", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: 1}, 1, fixed(3), 0},
		{"negative rnd is clamped", Backoff{Initial: 10 * time.Second, Max: time.Minute, Factor: 2, Jitter: 1}, 1, fixed(-3), 10 * time.Second},
		{"full jitter at the largest duration", Backoff{Initial: time.Second, Factor: 2, Jitter: 1}, 500, fixed(1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.Delay(tt.n, tt.rnd); got != tt.want {
				t.Errorf("%+v.Delay(%d) = %v, want %v", tt.b, tt.n, got, tt.want)
			}
		})
	}
}

func TestDefaultBackoffs(t *testing.T) {
	var gotRestart, gotLaunch []time.Duration
	for n := 1; n <= 10; n++ {
		gotRestart = append(gotRestart, DefaultRestartBackoff().Delay(n, nil))
		gotLaunch = append(gotLaunch, DefaultLaunchBackoff().Delay(n, nil))
	}
	s := time.Second
	wantRestart := []time.Duration{2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s, 300 * s, 300 * s}
	if diff := cmp.Diff(wantRestart, gotRestart); diff != "" {
		t.Errorf("restart delays mismatch (-want +got):\n%s", diff)
	}
	round := func(ds []time.Duration) []time.Duration {
		out := make([]time.Duration, len(ds))
		for i, d := range ds {
			out[i] = d.Round(time.Second)
		}
		return out
	}
	wantLaunch := []time.Duration{10 * s, 16 * s, 26 * s, 41 * s, 66 * s, 105 * s, 168 * s, 268 * s, 300 * s, 300 * s}
	if diff := cmp.Diff(wantLaunch, round(gotLaunch)); diff != "" {
		t.Errorf("launch delays mismatch (-want +got):\n%s", diff)
	}
}

// Properties that must hold for any policy and any n: never negative, never
// above the cap, non-decreasing in n without jitter, and jitter takes off at
// most its fraction.
func checkDelay(t *testing.T, b Backoff, n int, r float64) {
	t.Helper()
	limit := b.Max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	plain := b.Delay(n, nil)
	if plain < 0 || plain > limit {
		t.Fatalf("%+v.Delay(%d) = %v, want within [0, %v]", b, n, plain, limit)
	}
	if n < math.MaxInt {
		if next := b.Delay(n+1, nil); next < plain {
			t.Fatalf("%+v: Delay(%d) = %v < Delay(%d) = %v, want non-decreasing", b, n+1, next, n, plain)
		}
	}
	jittered := b.Delay(n, func() float64 { return r })
	j := clamp01(b.Jitter)
	low := time.Duration(float64(plain) * (1 - j))
	// One microsecond of slack for float rounding on huge durations.
	if jittered > plain || jittered < low-time.Microsecond || jittered < 0 {
		t.Fatalf("%+v.Delay(%d, %v) = %v, want within [%v, %v]", b, n, r, jittered, low, plain)
	}
}

func TestDelayProperties(t *testing.T) {
	backoffs := []Backoff{
		DefaultRestartBackoff(),
		DefaultLaunchBackoff(),
		{Initial: time.Nanosecond, Max: math.MaxInt64, Factor: 10, Jitter: 1},
		{Initial: math.MaxInt64, Factor: 2},
		{Initial: 3 * time.Second, Max: time.Second, Factor: 1.01, Jitter: 0.3},
		{Initial: time.Millisecond, Factor: 1.0000001},
	}
	ns := []int{-1, 0, 1, 2, 3, 10, 62, 63, 64, 100, 1 << 20, math.MaxInt32, math.MaxInt - 1, math.MaxInt}
	for _, b := range backoffs {
		for _, n := range ns {
			for _, r := range []float64{0, 0.3, 0.999999} {
				checkDelay(t, b, n, r)
			}
		}
	}
}

func FuzzDelay(f *testing.F) {
	f.Add(int64(time.Second), int64(time.Minute), 2.0, 0.2, 5, 0.5)
	f.Add(int64(1), int64(0), 1e308, 1.0, math.MaxInt, 0.999)
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), 1.6, 0.0, 1, 0.0)
	f.Add(int64(-5), int64(-5), -2.0, -1.0, -1, -1.0)
	f.Fuzz(func(t *testing.T, initial, maxWait int64, factor, jitter float64, n int, r float64) {
		checkDelay(t, Backoff{Initial: time.Duration(initial), Max: time.Duration(maxWait), Factor: factor, Jitter: jitter}, n, r)
	})
}
