package fit

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"sortie/schema"
)

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Amount
		wantErr string // part of the error; "" means none
	}{
		{"", Amount{}, ""},
		{"  ", Amount{}, ""},
		{"4", Amount{N: 4, Set: true}, ""},
		{"4+", Amount{N: 4, AtLeast: true, Set: true}, ""},
		{" 7.5 + ", Amount{N: 7.5, AtLeast: true, Set: true}, ""},
		{"0.5", Amount{N: 0.5, Set: true}, ""},
		{"two", Amount{}, `resources.cpus: "two" is not an amount; use a number or "N+"`},
		{"0", Amount{}, `"0" is not an amount`},
		{"-2+", Amount{}, `"-2" is not an amount`},
		{"+", Amount{}, `"" is not an amount`},
		{"4++", Amount{}, `"4+" is not an amount`},
	} {
		got, err := ParseAmount("cpus", tc.in)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("ParseAmount(%q) error %v, want %q", tc.in, err, tc.wantErr)
		}
		if got != tc.want {
			t.Errorf("ParseAmount(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestAmountAdmits(t *testing.T) {
	exactly := func(n float64) Amount { return Amount{N: n, Set: true} }
	atLeast := func(n float64) Amount { return Amount{N: n, AtLeast: true, Set: true} }
	for _, tc := range []struct {
		a    Amount
		v    float64
		want bool
	}{
		{Amount{}, 0, true},
		{Amount{}, 96, true},
		{exactly(2), 2, true},
		{exactly(2), 4, false},
		{exactly(2), 1, false},
		{exactly(7.5), 7680.0 / 1024, true},
		{exactly(0.1 + 0.2), 0.3, true}, // float rounding is not a different size
		{atLeast(8), 8, true},
		{atLeast(8), 16, true},
		{atLeast(8), 7.99, false},
	} {
		if got := tc.a.Admits(tc.v); got != tc.want {
			t.Errorf("%+v.Admits(%v) = %v, want %v", tc.a, tc.v, got, tc.want)
		}
	}
}

func TestParseRequest(t *testing.T) {
	gpus := map[string]int{"A100": 1}
	for _, tc := range []struct {
		name    string
		r       schema.Resources
		want    Request
		wantErr string
	}{
		{"nothing asked: the defaults", schema.Resources{},
			Request{CPUs: Amount{N: 2, AtLeast: true, Set: true}, Memory: Amount{N: 8, AtLeast: true, Set: true}}, ""},
		{"a named type alone still gets the defaults", schema.Resources{InstanceType: "m6i.large"},
			Request{CPUs: Amount{N: 2, AtLeast: true, Set: true}, Memory: Amount{N: 8, AtLeast: true, Set: true}}, ""},
		{"cpus alone: memory is free", schema.Resources{CPUs: "4"},
			Request{CPUs: Amount{N: 4, Set: true}}, ""},
		{"memory alone: cpus are free", schema.Resources{Memory: "32+"},
			Request{Memory: Amount{N: 32, AtLeast: true, Set: true}}, ""},
		{"accelerators alone: no defaults", schema.Resources{Accelerators: gpus},
			Request{Accelerators: gpus}, ""},
		{"bad cpus", schema.Resources{CPUs: "many"}, Request{}, "resources.cpus: "},
		{"bad memory", schema.Resources{CPUs: "2", Memory: "8GB"}, Request{}, "resources.memory: "},
	} {
		got, err := ParseRequest(tc.r, nil)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Request{}, "Match")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// dashSegment matches as Compute Engine's names do: "a100" is a part of
// "nvidia-tesla-a100".
func dashSegment(offered, asked string) bool {
	return slices.Contains(strings.Split(offered, "-"), strings.ToLower(asked))
}

func TestSmallest(t *testing.T) {
	offers := []Offer{
		{Name: "m-4", CPUs: 4, MemoryGiB: 16},
		{Name: "m-2b", CPUs: 2, MemoryGiB: 8},
		{Name: "m-2a", CPUs: 2, MemoryGiB: 8},
		{Name: "c-2", CPUs: 2, MemoryGiB: 4},
		{Name: "t-2", CPUs: 2, MemoryGiB: 1},
		{Name: "hm-4", CPUs: 4, MemoryGiB: 32},
		{Name: "g-2", CPUs: 2, MemoryGiB: 8, Accelerators: map[string]int{"L4": 1}},
		{Name: "g-4a", CPUs: 4, MemoryGiB: 16, Accelerators: map[string]int{"A10G": 2}},
		{Name: "g-4b", CPUs: 4, MemoryGiB: 16, Accelerators: map[string]int{"A10G": 1}},
		{Name: "p-96", CPUs: 96, MemoryGiB: 1152, Accelerators: map[string]int{"A100": 8}},
		{Name: "a-12", CPUs: 12, MemoryGiB: 85, Accelerators: map[string]int{"nvidia-tesla-a100": 1}},
	}
	req := func(cpus, memory string, accels map[string]int) Request {
		r, err := ParseRequest(schema.Resources{CPUs: cpus, Memory: memory, Accelerators: accels}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	withMatch := func(r Request, m AcceleratorMatch) Request { r.Match = m; return r }
	for _, tc := range []struct {
		name string
		req  Request
		want string // "" means none fits
	}{
		{"defaults; a tie on size goes to the first name", req("", "", nil), "m-2a"},
		{"exact cpus: least memory", req("2", "", nil), "t-2"},
		{"at least cpus, exact memory", req("2+", "4", nil), "c-2"},
		{"more cpus", req("3+", "", nil), "m-4"},
		{"more memory", req("", "17+", nil), "hm-4"},
		{"no type with exactly 3 cpus", req("3", "", nil), ""},
		{"accelerator types are left out unless asked for", req("2", "8", nil), "m-2a"},
		{"an accelerator, any case; fewer accelerators before the name", req("", "", map[string]int{"a10g": 1}), "g-4b"},
		{"a count", req("", "", map[string]int{"A10G": 2}), "g-4a"},
		{"alternatives: the smallest of either", req("", "", map[string]int{"A100": 8, "L4": 1}), "g-2"},
		{"alternatives, only one offered", req("", "", map[string]int{"A100": 8, "H100": 8}), "p-96"},
		{"too many", req("", "", map[string]int{"L4": 2}), ""},
		{"cpus and an accelerator together", req("3+", "", map[string]int{"L4": 1}), ""},
		{"SameName does not match a part", req("", "", map[string]int{"a100": 1}), "p-96"},
		{"a cloud's own match", withMatch(req("", "", map[string]int{"a100": 1}), dashSegment), "a-12"},
		{"more than any has", req("1000+", "", nil), ""},
	} {
		got, ok := Smallest(offers, tc.req)
		if ok != (tc.want != "") || got.Name != tc.want {
			t.Errorf("%s: Smallest = %q, %v; want %q", tc.name, got.Name, ok, tc.want)
		}
	}
	if _, ok := Smallest(nil, req("", "", nil)); ok {
		t.Error("Smallest of no offers: ok")
	}
	// The choice does not depend on the order of the catalog.
	reversed := slices.Clone(offers)
	slices.Reverse(reversed)
	for _, r := range []Request{req("", "", nil), req("4", "16", map[string]int{"A10G": 1})} {
		a, _ := Smallest(offers, r)
		b, _ := Smallest(reversed, r)
		if a.Name != b.Name {
			t.Errorf("%+v: %q in catalog order, %q reversed", r, a.Name, b.Name)
		}
	}
}
