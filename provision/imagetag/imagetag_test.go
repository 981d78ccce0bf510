package imagetag

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]string{"skypilot:gpu-ubuntu-2004": "gpu-ubuntu-2004", " skypilot:cpu-debian-11 ": "cpu-debian-11"} {
		if got, ok := Parse(in); !ok || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"ami-0abc", "docker:ubuntu:22.04", "projects/p/global/images/family/f", ""} {
		if _, ok := Parse(in); ok {
			t.Errorf("Parse(%q) says it is a tag", in)
		}
	}
}

// Every tag a cloud resolves names an OS and flavour SkyPilot documents,
// and every AWS name pattern either names its architecture or is an
// x86_64-only image.
func TestTables(t *testing.T) {
	known := map[string]bool{}
	for _, flavour := range []string{"cpu", "gpu"} {
		for _, os := range []string{"ubuntu-1804", "ubuntu-2004", "ubuntu-2204", "debian-10", "debian-11"} {
			known[flavour+"-"+os] = true
		}
	}
	for tag, look := range AWS() {
		if !known[tag] || look.Owner == "" || look.Name == "" {
			t.Errorf("aws %s: %+v", tag, look)
		}
		if strings.HasPrefix(tag, "cpu-") && look.NameFor("arm64") == look.NameFor("x86_64") {
			t.Errorf("aws %s: a CPU image must follow the instance's architecture", tag)
		}
	}
	for tag, look := range GCP() {
		if !known[tag] || look.Project == "" || look.Family == "" {
			t.Errorf("gcp %s: %+v", tag, look)
		}
	}
	if got := AWS()["cpu-ubuntu-2004"].NameFor("arm64"); got != "ubuntu/images/hvm-ssd*/ubuntu-focal-20.04-arm64-server-*" {
		t.Errorf("arm64 name %s", got)
	}
	if got, ok := Describe(GCP(), "skypilot:cpu-ubuntu-2204"); !ok || got != "the newest image of family ubuntu-2204-lts in project ubuntu-os-cloud" {
		t.Errorf("Describe = %q, %v", got, ok)
	}
	if _, ok := Describe(AWS(), "skypilot:gpu-debian-10"); ok {
		t.Error("aws describes a tag it has no image for")
	}
	names := Names(GCP())
	if len(names) != len(GCP()) || names[0] != "skypilot:cpu-debian-10" {
		t.Errorf("Names = %v", names)
	}
	err := Unknown("skypilot:gpu-debian-10", "aws", Names(AWS()))
	for _, want := range []string{`"skypilot:gpu-debian-10"`, "no image on aws", "skypilot:cpu-ubuntu-2004"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Unknown lacks %q: %v", want, err)
		}
	}
}
