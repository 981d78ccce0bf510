package strategy

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/schema"
)

func TestPreemptionWeights(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a, b := pl("aws", "r1", "r1-a"), pl("aws", "r1", "r1-b")
	tests := []struct {
		name     string
		ps       []Preemption
		halfLife time.Duration
		want     map[schema.Placement]float64
	}{
		{"one now weighs 1", []Preemption{{a, now}}, time.Hour, map[schema.Placement]float64{a: 1}},
		{"one a half-life ago weighs 1/2", []Preemption{{a, now.Add(-time.Hour)}}, time.Hour, map[schema.Placement]float64{a: 0.5}},
		{"weights add up per zone", []Preemption{{a, now}, {a, now.Add(-2 * time.Hour)}, {b, now.Add(-30 * time.Minute)}}, time.Hour,
			map[schema.Placement]float64{a: 1.25, b: math.Exp2(-0.5)}},
		{"cloud names compare case-insensitively", []Preemption{{pl("AWS", "r1", "r1-a"), now}, {a, now}}, time.Hour,
			map[schema.Placement]float64{a: 2}},
		{"older than four half-lives weighs nothing", []Preemption{{a, now.Add(-4*time.Hour - time.Second)}}, time.Hour,
			map[schema.Placement]float64{}},
		{"four half-lives ago still counts", []Preemption{{a, now.Add(-4 * time.Hour)}}, time.Hour,
			map[schema.Placement]float64{a: 1.0 / 16}},
		{"a shorter half-life forgets sooner", []Preemption{{a, now.Add(-time.Hour)}}, 10 * time.Minute,
			map[schema.Placement]float64{}},
		{"the future weighs nothing", []Preemption{{a, now.Add(time.Minute)}}, time.Hour, map[schema.Placement]float64{}},
		{"no half-life weighs nothing", []Preemption{{a, now}}, 0, map[schema.Placement]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PreemptionWeights(tt.ps, now, tt.halfLife)
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(x, y float64) bool { return math.Abs(x-y) < 1e-9 })); diff != "" {
				t.Errorf("weights (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAvoidPreempted(t *testing.T) {
	a, b, c := pl("aws", "r1", "r1-a"), pl("aws", "r1", "r1-b"), pl("aws", "r2", "r2-a")
	cand := func(p schema.Placement, spot bool) Candidate {
		return Candidate{Placement: p, Resources: schema.Resources{Cloud: p.Cloud, Region: p.Region, Zone: p.Zone, UseSpot: spot}}
	}
	zones := func(cs []Candidate) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Placement.Zone)
		}
		return out
	}
	tests := []struct {
		name    string
		cands   []Candidate
		weights map[schema.Placement]float64
		want    []string
	}{
		{"a preempted zone goes last", []Candidate{cand(a, true), cand(b, true), cand(c, true)},
			map[schema.Placement]float64{a: 0.5}, []string{"r1-b", "r2-a", "r1-a"}},
		{"the less preempted first among the preempted", []Candidate{cand(a, true), cand(b, true), cand(c, true)},
			map[schema.Placement]float64{a: 2, b: 0.25}, []string{"r2-a", "r1-b", "r1-a"}},
		{"on-demand candidates are not moved", []Candidate{cand(a, false), cand(b, false)},
			map[schema.Placement]float64{a: 3}, []string{"r1-a", "r1-b"}},
		{"no history: the order as it came", []Candidate{cand(c, true), cand(a, true)}, nil, []string{"r2-a", "r1-a"}},
		{"every zone preempted: still all tried", []Candidate{cand(a, true), cand(b, true)},
			map[schema.Placement]float64{a: 1, b: 1}, []string{"r1-a", "r1-b"}},
		{"cloud names compare case-insensitively", []Candidate{cand(pl("AWS", "r1", "r1-a"), true), cand(b, true)},
			map[schema.Placement]float64{a: 1}, []string{"r1-b", "r1-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Candidate(nil), tt.cands...)
			if diff := cmp.Diff(tt.want, zones(AvoidPreempted(tt.cands, tt.weights))); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(in, tt.cands); diff != "" {
				t.Errorf("input modified:\n%s", diff)
			}
		})
	}
}
