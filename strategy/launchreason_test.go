package strategy

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNoResourceReason(t *testing.T) {
	a, b := pl("local", "local", "local-a"), pl("local", "local", "local-b")
	tests := []struct {
		name   string
		tries  []LaunchTry
		rounds int
		want   string
	}{
		{
			name:   "nothing tried",
			rounds: 3,
			want:   "no resources after 3 rounds; no placement was tried",
		},
		{
			name:   "one round, one try each",
			tries:  []LaunchTry{{a, ClassCapacity, "zone local-a is out of capacity"}, {b, ClassTransient, ""}},
			rounds: 1,
			want:   "no resources after 1 round; tried local/local-a once: no capacity (zone local-a is out of capacity); local/local-b once: transient error",
		},
		{
			name: "several rounds: counted per placement, last error shown",
			tries: []LaunchTry{
				{a, ClassCapacity, "full"}, {b, ClassCapacity, "full"},
				{b, ClassTransient, "timeout"}, {a, ClassCapacity, "still full"},
				{a, ClassCapacity, "still full"}, {b, ClassCapacity, "full"},
			},
			rounds: 3,
			want:   "no resources after 3 rounds; tried local/local-a 3 times: no capacity (still full); local/local-b 3 times: no capacity (full)",
		},
		{
			name: "other clouds and classes",
			tries: []LaunchTry{
				{pl("aws", "us-east-1", "us-east-1a"), ClassPrechecks, "unknown instance type"},
				{pl("gcp", "us-central1", ""), "weird", "?"},
			},
			rounds: 2,
			want:   "no resources after 2 rounds; tried us-east-1/us-east-1a once: cannot launch (unknown instance type); us-central1 once: launch failed (?)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NoResourceReason(tt.tries, tt.rounds)); diff != "" {
				t.Errorf("NoResourceReason() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackingOffReason(t *testing.T) {
	a, b, c := pl("local", "local", "local-a"), pl("local", "local", "local-b"), pl("local", "r2", "r2-a")
	tests := []struct {
		name  string
		tries []LaunchTry
		wait  time.Duration
		want  string
	}{
		{
			name:  "capacity everywhere",
			tries: []LaunchTry{{a, ClassCapacity, "x"}, {b, ClassCapacity, "y"}},
			wait:  40 * time.Second,
			want:  "no capacity in local/local-a, local/local-b; next try in 40s",
		},
		{
			name:  "grouped by class in the order first seen",
			tries: []LaunchTry{{a, ClassTransient, "x"}, {b, ClassCapacity, "y"}, {c, ClassTransient, "z"}},
			wait:  90 * time.Second,
			want:  "transient error in local/local-a, r2/r2-a; no capacity in local/local-b; next try in 1m30s",
		},
		{
			name:  "a placement tried twice is named once, by its last error",
			tries: []LaunchTry{{a, ClassTransient, "x"}, {a, ClassCapacity, "y"}},
			wait:  5 * time.Minute,
			want:  "no capacity in local/local-a; next try in 5m",
		},
		{
			name: "sub-second waits round up",
			wait: 300 * time.Millisecond,
			want: "waiting to launch; next try in 1s",
		},
		{
			name:  "fractions of a second round up",
			tries: []LaunchTry{{a, ClassCapacity, ""}},
			wait:  time.Hour + 2*time.Minute + 500*time.Millisecond,
			want:  "no capacity in local/local-a; next try in 1h2m1s",
		},
		{
			name:  "no wait",
			tries: []LaunchTry{{a, ClassCapacity, ""}},
			want:  "no capacity in local/local-a; next try now",
		},
		{
			name:  "the largest wait does not overflow",
			tries: []LaunchTry{{a, ClassCapacity, ""}},
			wait:  time.Duration(1<<63 - 1),
			want:  "no capacity in local/local-a; next try in 2562047h47m17s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BackingOffReason(tt.tries, tt.wait)); diff != "" {
				t.Errorf("BackingOffReason() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
