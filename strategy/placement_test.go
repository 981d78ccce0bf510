package strategy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/schema"
)

// catalog is what the fake providers offer, in their order of preference.
var catalog = []schema.Placement{
	{Cloud: "local", Region: "local", Zone: "local-a"},
	{Cloud: "local", Region: "local", Zone: "local-b"},
	{Cloud: "local", Region: "r2", Zone: "r2-a"},
	{Cloud: "local", Region: "r2", Zone: "r2-b"},
	{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"},
	{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b"},
	{Cloud: "aws", Region: "us-west-2", Zone: "us-west-2a"},
	{Cloud: "gcp", Region: "us-central1", Zone: "us-central1-a"},
}

// offer filters the catalog the way a provider does; an empty cloud asks
// every cloud. The "broken" cloud errors, as a provider without credentials
// would.
func offer(r schema.Resources) ([]schema.Placement, error) {
	if r.Cloud == "broken" {
		return nil, errors.New("no credentials")
	}
	var out []schema.Placement
	for _, p := range catalog {
		if (r.Cloud == "" || p.Cloud == r.Cloud) && (r.Region == "" || p.Region == r.Region) && (r.Zone == "" || p.Zone == r.Zone) {
			out = append(out, p)
		}
	}
	return out, nil
}

// at is a candidate at p launched with r, whose location is set to p.
// taskClouds are the clouds the task files of these tests may name: the
// catalog's, an AWS zone telling its region as in the catalog.
var taskClouds = schema.Clouds{{Name: "local"}, {Name: "aws", Place: func(name string) (string, bool) {
	for _, p := range catalog {
		switch {
		case p.Cloud != "aws":
		case p.Zone == name:
			return p.Region, true
		case p.Region == name:
			return "", true
		}
	}
	return "", false
}}}

func at(p schema.Placement, r schema.Resources) Candidate {
	r.Cloud, r.Region, r.Zone = p.Cloud, p.Region, p.Zone
	return Candidate{Placement: p, Resources: r}
}

func pl(cloud, region, zone string) schema.Placement {
	return schema.Placement{Cloud: cloud, Region: region, Zone: zone}
}

func TestCandidates(t *testing.T) {
	recovery := &schema.JobRecovery{Strategy: schema.Failover, MaxRestartsOnErrors: 1}
	tests := []struct {
		name string
		r    schema.Resources
		want []Candidate
	}{
		{
			name: "every offered placement of the cloud",
			r:    schema.Resources{Cloud: "local", CPUs: "2+"},
			want: []Candidate{
				at(pl("local", "local", "local-a"), schema.Resources{CPUs: "2+"}),
				at(pl("local", "local", "local-b"), schema.Resources{CPUs: "2+"}),
				at(pl("local", "r2", "r2-a"), schema.Resources{CPUs: "2+"}),
				at(pl("local", "r2", "r2-b"), schema.Resources{CPUs: "2+"}),
			},
		},
		{
			name: "no cloud asks every provider",
			r:    schema.Resources{Region: "us-central1"},
			want: []Candidate{at(pl("gcp", "us-central1", "us-central1-a"), schema.Resources{})},
		},
		{
			name: "pinned region",
			r:    schema.Resources{Cloud: "local", Region: "r2"},
			want: []Candidate{
				at(pl("local", "r2", "r2-a"), schema.Resources{}),
				at(pl("local", "r2", "r2-b"), schema.Resources{}),
			},
		},
		{
			name: "pinned zone",
			r:    schema.Resources{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b"},
			want: []Candidate{at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{})},
		},
		{
			name: "infra cloud/region",
			r:    schema.Resources{Infra: "aws/us-east-1", UseSpot: true},
			want: []Candidate{
				at(pl("aws", "us-east-1", "us-east-1a"), schema.Resources{UseSpot: true}),
				at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{UseSpot: true}),
			},
		},
		{
			name: "infra cloud/region/zone",
			r:    schema.Resources{Infra: "AWS/us-west-2/us-west-2a"},
			want: []Candidate{at(pl("aws", "us-west-2", "us-west-2a"), schema.Resources{})},
		},
		{
			name: "infra with a wildcard cloud",
			r:    schema.Resources{Infra: "*/r2"},
			want: []Candidate{
				at(pl("local", "r2", "r2-a"), schema.Resources{}),
				at(pl("local", "r2", "r2-b"), schema.Resources{}),
			},
		},
		{
			name: "ordered: item by item, each overriding the base",
			r: schema.Resources{Cloud: "aws", InstanceType: "m6i.large", JobRecovery: recovery, Ordered: []schema.Resources{
				{Region: "us-west-2"},
				{Region: "us-east-1", Zone: "us-east-1b", InstanceType: "m5.large", UseSpot: true},
				{Cloud: "local", Region: "local"},
			}},
			want: []Candidate{
				at(pl("aws", "us-west-2", "us-west-2a"), schema.Resources{InstanceType: "m6i.large", JobRecovery: recovery}),
				at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{InstanceType: "m5.large", UseSpot: true, JobRecovery: recovery}),
				at(pl("local", "local", "local-a"), schema.Resources{InstanceType: "m6i.large", JobRecovery: recovery}),
				at(pl("local", "local", "local-b"), schema.Resources{InstanceType: "m6i.large", JobRecovery: recovery}),
			},
		},
		{
			name: "ordered item with infra",
			r:    schema.Resources{Cloud: "local", Ordered: []schema.Resources{{Infra: "gcp"}, {Infra: "local/r2/r2-b"}}},
			want: []Candidate{
				at(pl("gcp", "us-central1", "us-central1-a"), schema.Resources{}),
				at(pl("local", "r2", "r2-b"), schema.Resources{}),
			},
		},
		{
			name: "any_of: items interleaved by the provider's rank",
			r: schema.Resources{Memory: "8+", AnyOf: []schema.Resources{
				{Cloud: "aws", Region: "us-east-1"},
				{Cloud: "local", Accelerators: map[string]int{"A100": 1}},
			}},
			want: []Candidate{
				at(pl("aws", "us-east-1", "us-east-1a"), schema.Resources{Memory: "8+"}),
				at(pl("local", "local", "local-a"), schema.Resources{Memory: "8+", Accelerators: map[string]int{"A100": 1}}),
				at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{Memory: "8+"}),
				at(pl("local", "local", "local-b"), schema.Resources{Memory: "8+", Accelerators: map[string]int{"A100": 1}}),
				at(pl("local", "r2", "r2-a"), schema.Resources{Memory: "8+", Accelerators: map[string]int{"A100": 1}}),
				at(pl("local", "r2", "r2-b"), schema.Resources{Memory: "8+", Accelerators: map[string]int{"A100": 1}}),
			},
		},
		{
			name: "an item naming another cloud drops the base's region and zone",
			r:    schema.Resources{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", AnyOf: []schema.Resources{{Cloud: "gcp"}, {}}},
			want: []Candidate{
				at(pl("gcp", "us-central1", "us-central1-a"), schema.Resources{}),
				at(pl("aws", "us-east-1", "us-east-1a"), schema.Resources{}),
			},
		},
		{
			name: "an item naming another region drops the base's zone",
			r:    schema.Resources{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", Ordered: []schema.Resources{{Region: "us-west-2"}}},
			want: []Candidate{at(pl("aws", "us-west-2", "us-west-2a"), schema.Resources{})},
		},
		{
			name: "an item naming the same region keeps the base's zone",
			r:    schema.Resources{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b", Ordered: []schema.Resources{{Region: "us-east-1", DiskSize: 200}}},
			want: []Candidate{at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{DiskSize: 200})},
		},
		{
			name: "identical items are listed once",
			r:    schema.Resources{AnyOf: []schema.Resources{{Cloud: "local", Region: "local"}, {Cloud: "local", Region: "local"}}},
			want: []Candidate{
				at(pl("local", "local", "local-a"), schema.Resources{}),
				at(pl("local", "local", "local-b"), schema.Resources{}),
			},
		},
		{
			name: "items that differ in resources at the same placement are both kept",
			r:    schema.Resources{Cloud: "aws", Zone: "us-east-1a", Region: "us-east-1", Ordered: []schema.Resources{{InstanceType: "a"}, {InstanceType: "b"}}},
			want: []Candidate{
				at(pl("aws", "us-east-1", "us-east-1a"), schema.Resources{InstanceType: "a"}),
				at(pl("aws", "us-east-1", "us-east-1a"), schema.Resources{InstanceType: "b"}),
			},
		},
		{
			name: "items override ports, tiers and labels",
			r: schema.Resources{Cloud: "aws", Region: "us-west-2", Ports: []string{"8080"}, DiskTier: "low", NetworkTier: "standard",
				Labels:  map[string]string{"team": "a"},
				Ordered: []schema.Resources{{}, {Ports: []string{"9000-9010"}, DiskTier: "best", NetworkTier: "best", Labels: map[string]string{"team": "b"}}}},
			want: []Candidate{
				at(pl("aws", "us-west-2", "us-west-2a"), schema.Resources{Ports: []string{"8080"}, DiskTier: "low", NetworkTier: "standard", Labels: map[string]string{"team": "a"}}),
				at(pl("aws", "us-west-2", "us-west-2a"), schema.Resources{Ports: []string{"9000-9010"}, DiskTier: "best", NetworkTier: "best", Labels: map[string]string{"team": "b"}}),
			},
		},
		{
			name: "an ordered item nothing is offered for is skipped",
			r:    schema.Resources{Cloud: "local", Ordered: []schema.Resources{{Region: "nowhere"}, {Region: "r2", Zone: "r2-a"}}},
			want: []Candidate{at(pl("local", "r2", "r2-a"), schema.Resources{})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Candidates(tt.r, offer)
			if err != nil {
				t.Fatalf("Candidates() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Candidates() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// A task file's accelerator set or list reaches the candidates as one
// candidate per accelerator, in the order the file's form gives.
func TestCandidatesFromAcceleratorAlternatives(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want []Candidate
	}{
		{"resources: {cloud: aws, region: us-east-1, accelerators: {H100:1, A100:1}}", []Candidate{
			at(pl("aws", "us-east-1", "us-east-1a"), schema.Resources{Accelerators: map[string]int{"A100": 1}}),
			at(pl("aws", "us-east-1", "us-east-1a"), schema.Resources{Accelerators: map[string]int{"H100": 1}}),
			at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{Accelerators: map[string]int{"A100": 1}}),
			at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{Accelerators: map[string]int{"H100": 1}}),
		}},
		{"resources: {cloud: aws, zone: us-east-1b, accelerators: [H100:8, A100:8]}", []Candidate{
			at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{Accelerators: map[string]int{"H100": 8}}),
			at(pl("aws", "us-east-1", "us-east-1b"), schema.Resources{Accelerators: map[string]int{"A100": 8}}),
		}},
	} {
		p, err := schema.Parse([]byte(tt.yaml), taskClouds)
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		r := p.Tasks[0].Resources
		r.JobRecovery = nil
		got, err := Candidates(r, offer)
		if err != nil {
			t.Fatalf("%s: Candidates: %v", tt.yaml, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tt.yaml, diff)
		}
	}
}

// A provider that ignores the pin must not lead sortie outside it.
func TestCandidatesEnforcesPins(t *testing.T) {
	everything := func(schema.Resources) ([]schema.Placement, error) { return catalog, nil }
	got, err := Candidates(schema.Resources{Cloud: "local", Region: "r2", Zone: "r2-b"}, everything)
	if err != nil {
		t.Fatalf("Candidates() error = %v", err)
	}
	want := []Candidate{at(pl("local", "r2", "r2-b"), schema.Resources{})}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Candidates() mismatch (-want +got):\n%s", diff)
	}
}

func TestCandidatesErrors(t *testing.T) {
	tests := []struct {
		name    string
		r       schema.Resources
		is      error
		message []string
	}{
		{
			name:    "nothing offered",
			r:       schema.Resources{Cloud: "local", Region: "nowhere"},
			is:      ErrNoCandidates,
			message: []string{"cloud local, region nowhere", "check resources.cloud, region, zone and infra"},
		},
		{
			name:    "provider error names the item",
			r:       schema.Resources{AnyOf: []schema.Resources{{Cloud: "local"}, {Cloud: "broken", Region: "x"}}},
			message: []string{"resources.any_of[1] (cloud broken, region x)", "no credentials"},
		},
		{
			name:    "provider error for plain resources",
			r:       schema.Resources{Cloud: "broken"},
			message: []string{"placements for resources (cloud broken): no credentials"},
		},
		{
			name:    "any_of and ordered together",
			r:       schema.Resources{AnyOf: []schema.Resources{{}}, Ordered: []schema.Resources{{}}},
			message: []string{"any_of and ordered are both set; keep one of them"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Candidates(tt.r, offer)
			if err == nil {
				t.Fatalf("Candidates() = %v, want an error", got)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Candidates() error = %v, want one wrapping %v", err, tt.is)
			}
			for _, m := range tt.message {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("Candidates() error = %q, want it to contain %q", err, m)
				}
			}
		})
	}
}

// A candidate's own accelerators replace the task's with their own count:
// the task's fraction of one accelerator is not carried onto them.
func TestMergeDropsTheFractionWithTheAccelerators(t *testing.T) {
	base := schema.Resources{Cloud: "kubernetes", Accelerators: map[string]int{"A100": 1}, AcceleratorShare: 0.5}
	if m := merge(base, schema.Resources{CPUs: "4"}); m.AcceleratorShare != 0.5 {
		t.Errorf("a candidate without accelerators lost the fraction: %+v", m)
	}
	if m := merge(base, schema.Resources{Accelerators: map[string]int{"H100": 1}}); m.AcceleratorShare != 0 {
		t.Errorf("H100:1 from a candidate kept the fraction: %+v", m)
	}
}
