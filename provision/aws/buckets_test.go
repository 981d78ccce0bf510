package aws

import (
	"strings"
	"testing"

	"sortie/provision"
)

// A task with buckets gets aws.instance_profile on its instances (a name,
// or an ARN); without one it cannot launch, and the error says what to set.
func TestRunInputInstanceProfile(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	s := spec(902, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	_, err := e.provider(t).runInput(ctx, s, 0)
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "set aws.instance_profile") {
		t.Fatalf("a task with buckets and no instance profile: %v, want a prechecks error naming aws.instance_profile", err)
	}
	in, err := e.provider(t, func(c *Config) { c.InstanceProfile = "sortie-buckets" }).runInput(ctx, s, 0)
	if err != nil || in.IamInstanceProfile == nil || *in.IamInstanceProfile.Name != "sortie-buckets" {
		t.Fatalf("instance profile %+v, %v; want the name from the config", in.IamInstanceProfile, err)
	}
	arn := "arn:aws:iam::123456789012:instance-profile/sortie-buckets"
	in, err = e.provider(t, func(c *Config) { c.InstanceProfile = arn }).runInput(ctx, s, 0)
	if err != nil || in.IamInstanceProfile == nil || in.IamInstanceProfile.Arn == nil || *in.IamInstanceProfile.Arn != arn {
		t.Fatalf("instance profile %+v, %v; want the ARN", in.IamInstanceProfile, err)
	}
	s.Buckets = false
	if in, err = e.provider(t, func(c *Config) { c.InstanceProfile = "sortie-buckets" }).runInput(ctx, s, 0); err != nil || in.IamInstanceProfile != nil {
		t.Fatalf("a task without buckets got %+v, %v; want no instance profile", in.IamInstanceProfile, err)
	}
}
