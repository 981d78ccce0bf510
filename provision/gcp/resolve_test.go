package gcp

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/schema"
)

func TestMachineTypeChoice(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	_, types, err := p.catalog(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		r    schema.Resources
		want string // "" means none fits
	}{
		{schema.Resources{}, "e2-standard-2"},
		{schema.Resources{CPUs: "2"}, "e2-standard-2"},
		{schema.Resources{CPUs: "3+"}, "e2-standard-4"},
		{schema.Resources{Memory: "32+"}, "n2-highmem-4"},
		{schema.Resources{CPUs: "8", Memory: "32"}, "n2-standard-8"},
		{schema.Resources{CPUs: "3"}, ""},
		{schema.Resources{Accelerators: map[string]int{"L4": 1}}, "g2-standard-4"},
		{schema.Resources{Accelerators: map[string]int{"A100": 1}}, "a2-highgpu-1g"},
		{schema.Resources{Accelerators: map[string]int{"nvidia-tesla-a100": 1}}, "a2-highgpu-1g"},
		{schema.Resources{Accelerators: map[string]int{"A100": 2}}, ""},
		{schema.Resources{Accelerators: map[string]int{"A100": 1, "L4": 1}}, "g2-standard-4"},
		{schema.Resources{InstanceType: "e2-micro"}, "e2-micro"},
		{schema.Resources{InstanceType: "nope-1"}, ""},
	} {
		got, ok, err := resolveType(types["us-central1-a"], tc.r)
		if err != nil {
			t.Errorf("%+v: %v", tc.r, err)
			continue
		}
		if !ok {
			got.Name = ""
		}
		if got.Name != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got.Name, tc.want)
		}
	}
	if _, _, err := resolveType(types["us-central1-a"], schema.Resources{CPUs: "two"}); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("cpus \"two\": %v, want a prechecks error", err)
	}
}

func TestPlacements(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	pl := func(z string) schema.Placement {
		return schema.Placement{Cloud: CloudName, Region: regionOf(z), Zone: z}
	}
	for _, tc := range []struct {
		name string
		r    schema.Resources
		want []schema.Placement
	}{
		{"every configured region in order", schema.Resources{Cloud: CloudName},
			[]schema.Placement{pl("us-central1-a"), pl("us-central1-b"), pl("us-central1-c"), pl("us-east1-b"), pl("us-east1-c")}},
		{"a region", schema.Resources{Cloud: CloudName, Region: "us-east1"}, []schema.Placement{pl("us-east1-b"), pl("us-east1-c")}},
		{"a zone", schema.Resources{Cloud: CloudName, Region: "us-east1", Zone: "us-east1-c"}, []schema.Placement{pl("us-east1-c")}},
		{"another cloud", schema.Resources{Cloud: "aws"}, nil},
		{"any cloud, a region not ours", schema.Resources{Region: "eu-west-1"}, nil},
	} {
		got, err := p.Placements(ctx, tc.r)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if _, err := p.Placements(ctx, schema.Resources{Cloud: CloudName, Region: "europe-west4"}); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("a region not configured: %v, want a prechecks error naming gcp.regions", err)
	}
	e.fake.ResetCalls()
	if _, err := p.Placements(ctx, schema.Resources{Cloud: CloudName}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.AllCalls()); n != 0 {
		t.Errorf("Placements called the API again (%v); zones and machine types are cached", e.fake.AllCalls())
	}
}

func TestLabelsAndRequestIDs(t *testing.T) {
	for in, want := range map[string]string{"sortie-job": "sortie-job", "Team Name": "team-name", "9lives": "k-9lives", "": "k-"} {
		if got := labelKey(in); got != want {
			t.Errorf("labelKey(%q) = %q, want %q", in, got, want)
		}
	}
	if got := labelValue("Sortie/Run.1"); got != "sortie-run-1" {
		t.Errorf("labelValue = %q", got)
	}
	a := insertRequestID("p", "z", "n", 0)
	if a != insertRequestID("p", "z", "n", 0) {
		t.Error("request ids are not deterministic")
	}
	for _, other := range []string{insertRequestID("p", "z", "n", 1), insertRequestID("p", "z2", "n", 0), deleteRequestID("p", "z", 1)} {
		if other == a {
			t.Errorf("request id %s reused for another request", a)
		}
	}
	if len(a) != 36 || a[14] != '5' {
		t.Errorf("request id %q is not a version 5 UUID", a)
	}
	if err := validClusterName(provision.ClusterName(12, 0, 3), 4); err != nil {
		t.Error(err)
	}
	if err := validClusterName("Bad_Name", 1); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("a name Compute Engine refuses: %v", err)
	}
}
