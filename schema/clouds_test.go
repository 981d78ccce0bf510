package schema

import (
	"strings"
	"testing"
)

// A zone alone tells its region only by the form of its own cloud's
// zones: a GCP-formed zone under cloud: aws leaves the region to the
// provider (it used to become a GCP region on an AWS task).
func TestRegionOfZoneReadsTheNamedCloudsZones(t *testing.T) {
	for _, tc := range []struct{ yaml, cloud, region string }{
		{"resources: {zone: us-east-1a}", "aws", "us-east-1"},
		{"resources: {zone: us-central1-a}", "gcp", "us-central1"},
		{"resources: {cloud: gcp, zone: us-central1-a}", "gcp", "us-central1"},
		{"resources: {cloud: aws, zone: us-central1-a}", "aws", ""},
		{"resources: {cloud: kubernetes, zone: us-east-1a}", "kubernetes", ""},
	} {
		p, err := Parse([]byte("run: echo\n" + tc.yaml + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if r := p.Tasks[0].Resources; r.Cloud != tc.cloud || r.Region != tc.region {
			t.Errorf("%s: cloud %q region %q, want %q %q", tc.yaml, r.Cloud, r.Region, tc.cloud, tc.region)
		}
	}
}

// The clouds a task may name are the registered ones; the messages list
// them as registered.
func TestCloudsAreTheRegisteredOnes(t *testing.T) {
	if got := strings.Join(Clouds(), ","); got != "local,sim,aws,gcp,kubernetes" {
		t.Errorf("Clouds() = %s", got)
	}
	_, err := Parse([]byte("run: echo\nresources: {cloud: awz}\n"))
	if err == nil || !strings.Contains(err.Error(), `did you mean "aws"?`) {
		t.Errorf("cloud: awz: %v", err)
	}
	_, err = Parse([]byte("run: echo\nresources: {cloud: azure}\n"))
	if err == nil || !strings.Contains(err.Error(), "sortie runs on local, aws, gcp, kubernetes") {
		t.Errorf("cloud: azure: %v", err)
	}
	p, err := Parse([]byte("run: echo\nfile_mounts: {/data: {name: bucket-one}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, probs := p.Tasks[0].Buckets(""); len(probs) != 1 || !strings.Contains(probs[0].Message, "only on aws and gcp)") {
		t.Errorf("a storage mount on local without a store: %v", probs)
	}
	p, err = Parse([]byte("run: echo\nresources: {cloud: gcp}\nfile_mounts: {/data: {name: bucket-one}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if ms, probs := p.Tasks[0].Buckets(""); len(probs) != 0 || len(ms) != 1 || ms[0].Store != StoreGCS {
		t.Errorf("a storage mount on gcp without a store: %v %v", ms, probs)
	}
}
