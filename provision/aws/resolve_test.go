package aws

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/schema"
)

// Placements honour the instance type's zones and the region/zone pins.
func TestPlacements(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	ps, err := p.Placements(ctx, spot())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) == 0 || ps[0] != zone("us-east-1a") {
		t.Fatalf("Placements = %v, want us-east-1 zones first", ps)
	}
	regions := map[string]bool{}
	for _, pl := range ps {
		regions[pl.Region] = true
	}
	if !regions["us-east-1"] || !regions["us-west-2"] || len(regions) != 2 {
		t.Errorf("Placements cover regions %v, want exactly the configured two", regions)
	}
	r := spot()
	r.Region = "eu-west-1"
	if _, err := p.Placements(ctx, r); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("a region outside aws.regions: %v, want a prechecks error", err)
	}
	r.Cloud = ""
	if ps, err := p.Placements(ctx, r); err != nil || len(ps) != 0 {
		t.Errorf("a region outside aws.regions, cloud unset: %v, %v; want none", ps, err)
	}
	r = spot()
	r.Zone = "us-west-2c"
	if ps, err := p.Placements(ctx, r); err != nil || len(ps) != 1 || ps[0] != zone("us-west-2c") {
		t.Errorf("pinned zone: %v, %v", ps, err)
	}
	if ps, err := p.Placements(ctx, schema.Resources{Cloud: "gcp"}); err != nil || ps != nil {
		t.Errorf("another cloud: %v, %v; want none", ps, err)
	}
}

// The RunInstances request carries the count, spot options, disk, a type
// that fits, the image, key and group, and a client token per generation.
func TestRunInput(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	r := schema.Resources{CPUs: "2", Memory: "8+", DiskSize: 100, UseSpot: true}
	s := spec(901, 3, zone("us-west-2a"), r)
	in, err := p.runInput(ctx, s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if *in.MinCount != 3 || *in.MaxCount != 3 {
		t.Errorf("counts %d..%d, want 3..3", *in.MinCount, *in.MaxCount)
	}
	if in.InstanceMarketOptions == nil || in.InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior != "terminate" {
		t.Errorf("spot options %+v", in.InstanceMarketOptions)
	}
	if len(in.BlockDeviceMappings) != 1 || *in.BlockDeviceMappings[0].Ebs.VolumeSize != 100 {
		t.Errorf("block devices %+v, want one root volume of 100 GB", in.BlockDeviceMappings)
	}
	it, err := p.namedType(ctx, "us-west-2", string(in.InstanceType))
	if err != nil || vcpus(it) != 2 || memoryGiB(it) < 8 {
		t.Errorf("picked %s (%v vCPUs, %v GiB, %v), want 2 vCPUs and 8+ GiB", in.InstanceType, vcpus(it), memoryGiB(it), err)
	}
	img, err := p.image(ctx, "us-west-2", r, "x86_64")
	if err != nil || *in.ImageId != *img.ImageId || !strings.HasPrefix(*img.Name, "ubuntu/") {
		t.Errorf("image %s (%v), want the default Ubuntu image", *in.ImageId, err)
	}
	if *in.KeyName != p.KeyPairName() || !strings.HasPrefix(*in.KeyName, "sortie-") || len(in.SecurityGroupIds) != 1 {
		t.Errorf("key %s groups %v", *in.KeyName, in.SecurityGroupIds)
	}
	again, err := p.runInput(ctx, s, 0)
	if err != nil || *again.ClientToken != *in.ClientToken {
		t.Errorf("client token not stable: %s then %s (%v)", *in.ClientToken, *again.ClientToken, err)
	}
	if next, _ := p.runInput(ctx, s, 3); *next.ClientToken == *in.ClientToken {
		t.Error("a later generation reuses the client token")
	}
	// The key pair and the group were made once and are found again.
	p2 := e.provider(t)
	named := s
	named.Resources.InstanceType = string(in.InstanceType)
	if _, err := p2.runInput(ctx, named, 0); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"ImportKeyPair", "CreateSecurityGroup", "AuthorizeSecurityGroupIngress"} {
		if n := e.proxy.Calls(action, "us-west-2"); n != 1 {
			t.Errorf("%s called %d times by two providers, want 1", action, n)
		}
	}
}

func TestCheck(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	cfg := e.config()
	cfg.Regions = []string{"us-east-1", "ap-east-1", "xx-nowhere-1"}
	res, err := Check(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.CredentialSource == "" || !slices.Contains(res.EnabledRegions, "us-west-2") {
		t.Errorf("source %q enabled %v", res.CredentialSource, res.EnabledRegions)
	}
	if diff := cmp.Diff([]string{"us-east-1"}, res.Regions); diff != "" {
		t.Errorf("usable regions (-want +got):\n%s", diff)
	}
	if res.OK() || len(res.Problems) != 2 || !strings.Contains(res.Problems[0], "ap-east-1 is not enabled") ||
		!strings.Contains(res.Problems[1], `"xx-nowhere-1" is not an AWS region`) {
		t.Errorf("problems %q", res.Problems)
	}

	e.proxy.FailNext("DescribeRegions", "AuthFailure", "AWS was not able to validate the provided access credentials")
	res, err = Check(ctx, e.config())
	if err != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "rejected") {
		t.Errorf("rejected credentials: %q, %v", res.Problems, err)
	}

	cfg = e.config()
	cfg.Credentials = failingCredentials{}
	res, err = Check(ctx, cfg)
	if err != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0], "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: %q, %v", res.Problems, err)
	}
}
