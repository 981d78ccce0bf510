package gcp

import (
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/schema"
)

// A SkyPilot image tag boots the newest image of the tag's family in its
// public project, asked of Compute Engine once until the answer is six
// hours old.
func TestImageTagsBootTheFamilysNewestImage(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{Families: map[string]string{
		"projects/ubuntu-os-cloud/global/images/family/ubuntu-2004-lts":                            "ubuntu-2004-focal-v20240501",
		"projects/deeplearning-platform-release/global/images/family/common-cu121-debian-11-py310": "common-cu121-v20240514-debian-11-py310",
	}})
	var mu sync.Mutex
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	p := e.provider(t, func(c *Config) { c.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now } })
	s := spec(3, 1, "us-central1-b", schema.Resources{Cloud: CloudName, ImageID: "skypilot:cpu-ubuntu-2004"})
	launch(t, p, s)
	if got := e.fake.BootImage("us-central1-b", instanceName(s.Name, 0)); got != "projects/ubuntu-os-cloud/global/images/ubuntu-2004-focal-v20240501" {
		t.Errorf("boot image %s, want the family's newest image", got)
	}
	ctx := testContext(t)
	if got, err := p.taggedImage(ctx, "skypilot:gpu-debian-11"); err != nil || got != "projects/deeplearning-platform-release/global/images/common-cu121-v20240514-debian-11-py310" {
		t.Errorf("gpu-debian-11: %s (%v), want the Deep Learning VM image", got, err)
	}
	if n := e.fake.Calls("images.getFromFamily"); n != 2 {
		t.Fatalf("images.getFromFamily called %d times, want 2", n)
	}
	if _, err := p.taggedImage(ctx, "skypilot:cpu-ubuntu-2004"); err != nil || e.fake.Calls("images.getFromFamily") != 2 {
		t.Errorf("a tag resolved a moment ago was asked again (%d calls, %v)", e.fake.Calls("images.getFromFamily"), err)
	}
	mu.Lock()
	now = now.Add(tagLifetime + time.Minute)
	mu.Unlock()
	if _, err := p.taggedImage(ctx, "skypilot:cpu-ubuntu-2004"); err != nil || e.fake.Calls("images.getFromFamily") != 3 {
		t.Errorf("an answer older than %s was used again (%d calls, %v)", tagLifetime, e.fake.Calls("images.getFromFamily"), err)
	}
	if got, err := p.taggedImage(ctx, "projects/debian-cloud/global/images/family/debian-12"); err != nil || got != "projects/debian-cloud/global/images/family/debian-12" {
		t.Errorf("an image that is no tag: %s (%v), want it as it is", got, err)
	}
}

// A tag GCP has no family for, and a family the cloud does not know, fail
// the launch as prechecks, naming what is missing; nothing is made.
func TestImageTagsWithoutAFamilyAreRefused(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	_, err := p.Launch(ctx, spec(4, 1, "us-central1-b", schema.Resources{Cloud: CloudName, ImageID: "skypilot:gpu-ubuntu-1804"}))
	if provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("gpu-ubuntu-1804: %v, want a prechecks error", err)
	}
	for _, want := range []string{`"skypilot:gpu-ubuntu-1804"`, "no image on gcp", "skypilot:cpu-debian-10", "skypilot:gpu-ubuntu-2204"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	_, err = p.Launch(ctx, spec(5, 1, "us-central1-b", schema.Resources{Cloud: CloudName, ImageID: "skypilot:cpu-ubuntu-1804"}))
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "project ubuntu-os-cloud has no image family ubuntu-1804-lts") {
		t.Errorf("a family the cloud does not know: %v", err)
	}
	if n := len(e.fake.Instances()); n != 0 {
		t.Errorf("%d VMs made for refused launches", n)
	}
}
