package strategy

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/schema"
)

func TestOrder(t *testing.T) {
	r1a, r1b := pl("aws", "r1", "r1-a"), pl("aws", "r1", "r1-b")
	r2a, r2b := pl("aws", "r2", "r2-a"), pl("aws", "r2", "r2-b")
	r3a := pl("aws", "r3", "r3-a")
	gcpR1 := pl("gcp", "r1", "r1-a") // same names, another cloud: another region
	all := []schema.Placement{r1a, r1b, r2a, r2b, r3a}
	withGCP := []schema.Placement{r1a, gcpR1, r2a, r1b}
	onlyR1 := []schema.Placement{r1a, r1b}

	ptr := func(p schema.Placement) *schema.Placement { return &p }
	tests := []struct {
		name      string
		strategy  schema.Strategy
		cands     []schema.Placement
		preempted *schema.Placement
		round     int
		want      []schema.Placement
	}{
		{"failover, first launch: candidate order", schema.Failover, all, nil, 0, all},
		{"eager, first launch: candidate order", schema.EagerNextRegion, all, nil, 0, all},
		{"eager, later round without preemption: candidate order", schema.EagerNextRegion, all, nil, 4, all},
		{"failover, later round without preemption: candidate order", schema.Failover, all, nil, 4, all},

		{"failover: same region's other zone, then the preempted zone, then the rest",
			schema.Failover, all, ptr(r1a), 0, []schema.Placement{r1b, r1a, r2a, r2b, r3a}},
		{"failover: same on later rounds",
			schema.Failover, all, ptr(r1a), 3, []schema.Placement{r1b, r1a, r2a, r2b, r3a}},
		{"failover: preempted region moves to the front",
			schema.Failover, all, ptr(r2b), 0, []schema.Placement{r2a, r2b, r1a, r1b, r3a}},
		{"failover: region-level preemption keeps zone order",
			schema.Failover, all, ptr(pl("aws", "r2", "")), 0, []schema.Placement{r2a, r2b, r1a, r1b, r3a}},
		{"failover: strategy name is case-insensitive",
			"failover", all, ptr(r3a), 0, []schema.Placement{r3a, r1a, r1b, r2a, r2b}},
		{"failover: a region of the same name in another cloud is another region",
			schema.Failover, withGCP, ptr(r1a), 0, []schema.Placement{r1b, r1a, gcpR1, r2a}},
		{"failover: cloud names compare case-insensitively",
			schema.Failover, all, ptr(pl("AWS", "r2", "r2-a")), 0, []schema.Placement{r2b, r2a, r1a, r1b, r3a}},

		{"eager: round 0 skips the preempted region",
			schema.EagerNextRegion, all, ptr(r1a), 0, []schema.Placement{r2a, r2b, r3a}},
		{"eager: round 1 considers every candidate in order",
			schema.EagerNextRegion, all, ptr(r1a), 1, all},
		{"eager: round 0 skips the middle region",
			schema.EagerNextRegion, all, ptr(r2a), 0, []schema.Placement{r1a, r1b, r3a}},
		{"eager: only the preempted cloud's region is skipped",
			schema.EagerNextRegion, withGCP, ptr(r1b), 0, []schema.Placement{gcpR1, r2a}},
		{"eager: a pinned region falls back to its other zones first",
			schema.EagerNextRegion, onlyR1, ptr(r1a), 0, []schema.Placement{r1b, r1a}},
		{"eager: a pinned region on a later round keeps candidate order",
			schema.EagerNextRegion, onlyR1, ptr(r1a), 2, onlyR1},
		{"empty strategy is eager", "", all, ptr(r1a), 0, []schema.Placement{r2a, r2b, r3a}},
		{"lower-case eager", "eager_next_region", all, ptr(r1a), 0, []schema.Placement{r2a, r2b, r3a}},
		{"no candidates", schema.Failover, nil, ptr(r1a), 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := make([]Candidate, len(tt.cands))
			for i, p := range tt.cands {
				cands[i] = at(p, schema.Resources{InstanceType: "t" + string(rune('0'+i))})
			}
			before := slices.Clone(cands)

			got := Order(tt.strategy, cands, tt.preempted, tt.round)

			var gotPlacements []schema.Placement
			for _, c := range got {
				gotPlacements = append(gotPlacements, c.Placement)
				// Each candidate keeps its own resources.
				i := indexOf(before, c.Placement)
				if diff := cmp.Diff(before[i], c); diff != "" {
					t.Errorf("candidate at %v changed (-want +got):\n%s", c.Placement, diff)
				}
			}
			if diff := cmp.Diff(tt.want, gotPlacements); diff != "" {
				t.Errorf("Order() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, cands); diff != "" {
				t.Errorf("Order() modified its input (-want +got):\n%s", diff)
			}
		})
	}
}

func indexOf(cs []Candidate, p schema.Placement) int {
	for i, c := range cs {
		if c.Placement == p {
			return i
		}
	}
	return -1
}

// Writing into Order's result must not reach the caller's candidates.
func TestOrderReturnsACopy(t *testing.T) {
	cands := []Candidate{at(pl("aws", "r1", "r1-a"), schema.Resources{}), at(pl("aws", "r2", "r2-a"), schema.Resources{})}
	got := Order(schema.Failover, cands, nil, 0)
	got[0].Placement.Zone = "changed"
	if cands[0].Placement.Zone != "r1-a" {
		t.Errorf("Order() shares its result with its input")
	}
}
