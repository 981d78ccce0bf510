package aws

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"sortie/provision"
	"sortie/provision/imagetag"
	"sortie/provision/internal/testenv"
	"sortie/schema"
)

// motoImage is one image in moto's MOTO_AMIS_PATH format.
type motoImage struct {
	ID       string `json:"ami_id"`
	State    string `json:"state"`
	Public   bool   `json:"public"`
	Owner    string `json:"owner_id"`
	Location string `json:"image_location"`
	RootType string `json:"root_device_type"`
	RootName string `json:"root_device_name"`
	Type     string `json:"image_type"`
	Arch     string `json:"architecture"`
	Name     string `json:"name"`
	Virt     string `json:"virtualization_type"`
	Hyper    string `json:"hypervisor"`
	Created  string `json:"creation_date"`
}

func img(id, owner, arch, name, created string) motoImage {
	return motoImage{ID: id, State: "available", Public: true, Owner: owner, Location: owner + "/" + name,
		RootType: "ebs", RootName: "/dev/sda1", Type: "machine", Arch: arch, Name: name, Virt: "hvm", Hyper: "xen", Created: created}
}

// taggedAccount is moto serving publishers' images, as EC2's public
// catalogue holds them: two Focal builds of Canonical's (the newer one
// must win), an arm64 build, a look-alike from another account dated
// later (never picked: the owner is the publisher's), a Deep Learning
// Base AMI and a Debian 11 build. Only us-east-1 may be asked: moto
// 5.2.1 reads the file's creation dates in place, and fails the second
// region that loads them.
func taggedAccount(t *testing.T) (proxy *testenv.EC2Proxy, cfg Config, advance func(time.Duration)) {
	t.Helper()
	images := []motoImage{
		img("ami-0f0ca1000000000a1", imagetag.OwnerCanonical, "x86_64", "ubuntu/images/hvm-ssd/ubuntu-focal-20.04-amd64-server-20230112", "2023-01-12T00:00:00.000Z"),
		img("ami-0f0ca1000000000a2", imagetag.OwnerCanonical, "x86_64", "ubuntu/images/hvm-ssd/ubuntu-focal-20.04-amd64-server-20240501", "2024-05-01T00:00:00.000Z"),
		img("ami-0f0ca1000000000b1", imagetag.OwnerCanonical, "arm64", "ubuntu/images/hvm-ssd/ubuntu-focal-20.04-arm64-server-20240501", "2024-05-01T00:00:00.000Z"),
		img("ami-0bad00000000000c1", "111122223333", "x86_64", "ubuntu/images/hvm-ssd/ubuntu-focal-20.04-amd64-server-20991231", "2026-01-01T00:00:00.000Z"),
		img("ami-0d1a0000000000d01", imagetag.OwnerDLAMI, "x86_64", "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 20.04) 20240610", "2024-06-10T00:00:00.000Z"),
		img("ami-0deb0000000000e01", imagetag.OwnerDebian, "x86_64", "debian-11-amd64-20240507-1740", "2024-05-07T00:00:00.000Z"),
		img("ami-0a0ca1000000000f1", imagetag.OwnerCanonical, "x86_64", "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-20240501", "2024-05-01T00:00:00.000Z"),
	}
	b, err := json.Marshal(images)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "amis.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	moto := testenv.StartMotoWith(t, "MOTO_AMIS_PATH="+path)
	proxy = testenv.StartEC2Proxy(t, moto.URL)
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	cfg = Config{
		Home: t.TempDir(), Regions: []string{"us-east-1", "us-west-2"},
		Endpoint: proxy.URL, IAMEndpoint: proxy.URL, Logger: testenv.QuietLogger(),
		Credentials:      credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		RetryMaxAttempts: 1, PollInterval: 20 * time.Millisecond, LaunchTimeout: 30 * time.Second,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
	}
	return proxy, cfg, func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
}

// A SkyPilot image tag becomes the newest image of the tag's publisher
// that matches the OS, the flavour and the instance's architecture, asked
// of EC2 once per region, tag and architecture until the answer is six
// hours old.
func TestImageTagsResolveToThePublishersNewestImage(t *testing.T) {
	proxy, cfg, advance := taggedAccount(t)
	p := testenv.Build(t, New, cfg)
	ctx := testContext(t)
	for _, c := range []struct{ image, arch, want string }{
		{"skypilot:cpu-ubuntu-2004", "x86_64", "ami-0f0ca1000000000a2"},
		{"skypilot:cpu-ubuntu-2004", "arm64", "ami-0f0ca1000000000b1"},
		{"skypilot:gpu-ubuntu-2004", "x86_64", "ami-0d1a0000000000d01"},
		{"skypilot:cpu-debian-11", "x86_64", "ami-0deb0000000000e01"},
		{"skypilot:cpu-ubuntu-2204", "x86_64", "ami-0a0ca1000000000f1"},
	} {
		got, err := p.image(ctx, "us-east-1", schema.Resources{ImageID: c.image}, types.ArchitectureType(c.arch))
		if err != nil || awssdk.ToString(got.ImageId) != c.want {
			t.Errorf("%s on %s: %s (%v), want %s", c.image, c.arch, awssdk.ToString(got.ImageId), err, c.want)
		}
	}
	asked := proxy.Calls("DescribeImages", "us-east-1")
	if _, err := p.image(ctx, "us-east-1", schema.Resources{ImageID: "skypilot:cpu-ubuntu-2004"}, "x86_64"); err != nil {
		t.Fatal(err)
	}
	if n := proxy.Calls("DescribeImages", "us-east-1"); n != asked {
		t.Errorf("a tag resolved a moment ago was asked again (%d calls, was %d)", n, asked)
	}
	advance(tagLifetime + time.Minute)
	if _, err := p.image(ctx, "us-east-1", schema.Resources{ImageID: "skypilot:cpu-ubuntu-2004"}, "x86_64"); err != nil {
		t.Fatal(err)
	}
	if n := proxy.Calls("DescribeImages", "us-east-1"); n != asked+1 {
		t.Errorf("an answer older than %s was used again (%d calls, want %d)", tagLifetime, n, asked+1)
	}

	// The launch request boots the image the tag became.
	s := spec(902, 1, zone("us-east-1a"), schema.Resources{InstanceType: "t3.micro", ImageID: "skypilot:cpu-ubuntu-2004"})
	in, err := p.runInput(ctx, s, 0)
	if err != nil || awssdk.ToString(in.ImageId) != "ami-0f0ca1000000000a2" {
		t.Fatalf("RunInstances boots %v (%v), want ami-0f0ca1000000000a2", in, err)
	}
}

// A tag EC2 has no image for, and a tag whose publisher has no image in
// the region, fail the launch as prechecks, naming what is missing.
func TestImageTagsWithoutAnImageAreRefused(t *testing.T) {
	_, cfg, _ := taggedAccount(t)
	p := testenv.Build(t, New, cfg)
	ctx := testContext(t)
	_, err := p.image(ctx, "us-east-1", schema.Resources{ImageID: "skypilot:gpu-debian-10"}, "x86_64")
	if provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("gpu-debian-10: %v, want a prechecks error", err)
	}
	for _, want := range []string{`"skypilot:gpu-debian-10"`, "no image on aws", "skypilot:cpu-ubuntu-2004", "skypilot:gpu-ubuntu-2204"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	_, err = p.image(ctx, "us-east-1", schema.Resources{ImageID: "skypilot:cpu-ubuntu-1804"}, "x86_64")
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "account 099720109477 publishes no x86_64 image named ubuntu/images/hvm-ssd*/ubuntu-bionic-18.04-amd64-server-* in us-east-1") {
		t.Errorf("a tag with no image in the region: %v", err)
	}
	_, err = p.image(ctx, "us-east-1", schema.Resources{ImageID: "skypilot:gpu-ubuntu-2004"}, "arm64")
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "no arm64 image") {
		t.Errorf("a GPU tag on arm64, which has no such image: %v", err)
	}
}
