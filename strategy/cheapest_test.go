package strategy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/schema"
)

func TestCheapest(t *testing.T) {
	a, b, c, d := pl("aws", "r1", "r1-a"), pl("aws", "r1", "r1-b"), pl("aws", "r2", "r2-a"), pl("gcp", "g1", "g1-a")
	cand := func(p schema.Placement, typ string) Candidate {
		return Candidate{Placement: p, Resources: schema.Resources{Cloud: p.Cloud, Region: p.Region, Zone: p.Zone, InstanceType: typ}}
	}
	type price struct {
		perHour float64
		known   bool
	}
	tests := []struct {
		name   string
		cands  []Candidate
		prices map[string]price // by zone/instance type
		want   []string
	}{
		{"cheapest first", []Candidate{cand(a, "m"), cand(b, "m"), cand(c, "m")},
			map[string]price{"r1-a/m": {0.3, true}, "r1-b/m": {0.1, true}, "r2-a/m": {0.2, true}},
			[]string{"r1-b/m", "r2-a/m", "r1-a/m"}},
		{"equal prices keep the written order", []Candidate{cand(c, "m"), cand(a, "m"), cand(b, "m")},
			map[string]price{"r1-a/m": {0.1, true}, "r1-b/m": {0.1, true}, "r2-a/m": {0.1, true}},
			[]string{"r2-a/m", "r1-a/m", "r1-b/m"}},
		{"unknown prices last, in written order", []Candidate{cand(d, "n"), cand(a, "m"), cand(c, "m"), cand(b, "m")},
			map[string]price{"r2-a/m": {0.5, true}, "r1-b/m": {0.4, true}},
			[]string{"r1-b/m", "r2-a/m", "g1-a/n", "r1-a/m"}},
		{"types of one zone by price", []Candidate{cand(a, "big"), cand(a, "small")},
			map[string]price{"r1-a/big": {2, true}, "r1-a/small": {0.5, true}},
			[]string{"r1-a/small", "r1-a/big"}},
		{"a known price of zero is cheapest", []Candidate{cand(a, "m"), cand(b, "m")},
			map[string]price{"r1-a/m": {1, true}, "r1-b/m": {0, true}},
			[]string{"r1-b/m", "r1-a/m"}},
		{"no price known: the order as written", []Candidate{cand(c, "m"), cand(a, "m")}, nil,
			[]string{"r2-a/m", "r1-a/m"}},
		{"no candidates", nil, nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Candidate(nil), tt.cands...)
			got := Cheapest(tt.cands, func(c Candidate) (float64, bool) {
				p := tt.prices[c.Placement.Zone+"/"+c.Resources.InstanceType]
				return p.perHour, p.known
			})
			names := []string{}
			for _, c := range got {
				names = append(names, c.Placement.Zone+"/"+c.Resources.InstanceType)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(in, tt.cands); diff != "" {
				t.Errorf("input modified:\n%s", diff)
			}
		})
	}
}
