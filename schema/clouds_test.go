package schema

import (
	"regexp"
	"strings"
	"testing"
)

// testClouds are the clouds schema's tests read task files with: sortie's
// clouds, with the facts the registry (controller/clouds) gives them, and
// in its order. The registry's tests read these files with its own.
func testClouds() Clouds {
	awsPlace := regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-(north|south|east|west|central|northeast|northwest|southeast|southwest)-[0-9]+([a-z]|-[a-z]+-[0-9]+[a-z])?$`)
	awsZone := regexp.MustCompile(`^([a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-[0-9]+)(?:[a-z]|-[a-z]+-[0-9]+[a-z])$`)
	gcpPlace := regexp.MustCompile(`^[a-z]+-(north|south|east|west|central|northeast|northwest|southeast|southwest)[0-9]+(-[a-z])?$`)
	return Clouds{
		{Name: "local"},
		{Name: "sim", Hidden: true},
		{Name: "aws", Store: StoreS3, ImageTags: []string{"skypilot:cpu-debian-10", "skypilot:cpu-debian-11",
			"skypilot:cpu-ubuntu-1804", "skypilot:cpu-ubuntu-2004", "skypilot:cpu-ubuntu-2204",
			"skypilot:gpu-ubuntu-1804", "skypilot:gpu-ubuntu-2004", "skypilot:gpu-ubuntu-2204"}, Place: func(name string) (string, bool) {
			if !awsPlace.MatchString(name) {
				return "", false
			}
			if m := awsZone.FindStringSubmatch(name); m != nil {
				return m[1], true
			}
			return "", true
		}},
		{Name: "gcp", Store: StoreGCS, ImageTags: []string{"skypilot:cpu-debian-10", "skypilot:cpu-debian-11",
			"skypilot:cpu-ubuntu-1804", "skypilot:cpu-ubuntu-2004", "skypilot:cpu-ubuntu-2204",
			"skypilot:gpu-debian-10", "skypilot:gpu-debian-11", "skypilot:gpu-ubuntu-2004", "skypilot:gpu-ubuntu-2204"}, Place: func(name string) (string, bool) {
			if !gcpPlace.MatchString(name) {
				return "", false
			}
			if strings.Count(name, "-") == 2 {
				return name[:strings.LastIndex(name, "-")], true
			}
			return "", true
		}},
		{Name: "kubernetes", Aliases: []string{"k8s"}, WholeRegion: true, SharesAccelerators: true},
	}
}

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
		p, err := Parse([]byte("run: echo\n"+tc.yaml+"\n"), testClouds())
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		if r := p.Tasks[0].Resources; r.Cloud != tc.cloud || r.Region != tc.region {
			t.Errorf("%s: cloud %q region %q, want %q %q", tc.yaml, r.Cloud, r.Region, tc.cloud, tc.region)
		}
	}
}

// The clouds a task may name are the ones it is read with; the messages
// list them in their order, the hidden ones left out.
func TestCloudsAreTheOnesGiven(t *testing.T) {
	clouds := testClouds()
	if got := strings.Join(clouds.Names(), ","); got != "local,sim,aws,gcp,kubernetes" {
		t.Errorf("Names() = %s", got)
	}
	_, err := Parse([]byte("run: echo\nresources: {cloud: awz}\n"), clouds)
	if err == nil || !strings.Contains(err.Error(), `did you mean "aws"?`) {
		t.Errorf("cloud: awz: %v", err)
	}
	_, err = Parse([]byte("run: echo\nresources: {cloud: azure}\n"), clouds)
	if err == nil || !strings.Contains(err.Error(), "sortie runs on local, aws, gcp, kubernetes") {
		t.Errorf("cloud: azure: %v", err)
	}
	p, err := Parse([]byte("run: echo\nfile_mounts: {/data: {name: bucket-one}}\n"), clouds)
	if err != nil {
		t.Fatal(err)
	}
	if _, probs := p.Tasks[0].Buckets("", clouds); len(probs) != 1 || !strings.Contains(probs[0].Message, "only on aws and gcp)") {
		t.Errorf("a storage mount on local without a store: %v", probs)
	}
	p, err = Parse([]byte("run: echo\nresources: {cloud: gcp}\nfile_mounts: {/data: {name: bucket-one}}\n"), clouds)
	if err != nil {
		t.Fatal(err)
	}
	if ms, probs := p.Tasks[0].Buckets("", clouds); len(probs) != 0 || len(ms) != 1 || ms[0].Store != StoreGCS {
		t.Errorf("a storage mount on gcp without a store: %v %v", ms, probs)
	}

	// Read with fewer clouds, a task may name only those, and a cloud
	// left out is one sortie does not support.
	some := Clouds{clouds[0], clouds[2]}
	_, err = Parse([]byte("run: echo\nresources: {cloud: gcp}\n"), some)
	if err == nil || !strings.Contains(err.Error(), "is not a cloud sortie supports; use one of local, aws") {
		t.Errorf("cloud: gcp without gcp: %v", err)
	}
	if p, err := Parse([]byte("run: echo\nresources: {region: us-east1}\n"), some); err != nil || p.Tasks[0].Resources.Cloud != "" {
		t.Errorf("a GCP region without gcp: %v", err)
	}
	if _, probs := mustParse(t, "run: echo\nfile_mounts: {/data: {name: bucket-one}}\n").Tasks[0].Buckets("", Clouds{clouds[0]}); len(probs) != 1 || !strings.Contains(probs[0].Message, "only on no cloud)") {
		t.Errorf("a storage mount without a store, no cloud having one: %v", probs)
	}
}

// Clouds that cannot be told apart are refused.
func TestCloudsCheck(t *testing.T) {
	if err := testClouds().Check(); err != nil {
		t.Errorf("the test clouds: %v", err)
	}
	for _, cs := range []Clouds{
		{{Name: "aws"}, {Name: "aws"}},
		{{Name: "kubernetes", Aliases: []string{"k8s"}}, {Name: "k8s"}},
		{{Name: "AWS"}},
		{{Name: ""}},
	} {
		if err := cs.Check(); err == nil {
			t.Errorf("%v: no error", cs.Names())
		}
	}
}
