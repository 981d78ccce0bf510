package aws

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/strategy/clocktest"
)

// The instance profile of tasks with buckets, phase after phase on one
// emulated account (each moto takes seconds to start); resetProfile puts
// the account back as it was between phases that need it clean.
func TestInstanceProfile(t *testing.T) {
	e := newEnv(t)
	for _, phase := range []struct {
		name string
		run  func(*testing.T, *env)
	}{
		{"named", namedInstanceProfile},
		{"denied", nodeProfileDeniedSaysWhat},
		{"half made", nodeProfileFinishesHalfMade},
		{"made once and given", nodeProfileMadeOnceAndGiven},
		{"waits for a new profile", runInstancesWaitsForNewProfile},
	} {
		resetProfile(t, e)
		e.proxy.ResetCalls()
		if !t.Run(phase.name, func(t *testing.T) { phase.run(t, e) }) {
			return
		}
	}
}

// resetProfile deletes sortie-node's profile and role, as README.md here
// says to.
func resetProfile(t *testing.T, e *env) {
	t.Helper()
	ctx := testContext(t)
	api := iamOf(t, e)
	name, role := awssdk.String(NodeProfileName), awssdk.String(NodeRoleName)
	api.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: role})
	api.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
	api.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: role, PolicyName: awssdk.String(NodePolicyName)})
	api.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: role})
	if _, err := api.GetRole(ctx, &iam.GetRoleInput{RoleName: role}); !isIAM(err, "NoSuchEntity") {
		t.Fatalf("the role is still there after the reset: %v", err)
	}
}

// A task with buckets gets aws.instance_profile on its instances (a name,
// or an ARN) and sortie makes nothing in IAM; a task without gets none.
func namedInstanceProfile(t *testing.T, e *env) {
	ctx := testContext(t)
	s := spec(902, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	in, err := e.provider(t, func(c *Config) { c.InstanceProfile = "my-buckets" }).runInput(ctx, s, 0)
	if err != nil || in.IamInstanceProfile == nil || awssdk.ToString(in.IamInstanceProfile.Name) != "my-buckets" {
		t.Fatalf("instance profile %+v, %v; want the name from the config", in.IamInstanceProfile, err)
	}
	arn := "arn:aws:iam::123456789012:instance-profile/my-buckets"
	in, err = e.provider(t, func(c *Config) { c.InstanceProfile = arn }).runInput(ctx, s, 0)
	if err != nil || in.IamInstanceProfile == nil || awssdk.ToString(in.IamInstanceProfile.Arn) != arn {
		t.Fatalf("instance profile %+v, %v; want the ARN", in.IamInstanceProfile, err)
	}
	s.Buckets = false
	if in, err = e.provider(t).runInput(ctx, s, 0); err != nil || in.IamInstanceProfile != nil {
		t.Fatalf("a task without buckets got %+v, %v; want no instance profile", in.IamInstanceProfile, err)
	}
	for _, action := range []string{"GetInstanceProfile", "GetRole", "CreateRole", "CreateInstanceProfile"} {
		if n := e.proxy.Calls(action, ""); n != 0 {
			t.Errorf("%s called %d times; with a profile named, or no buckets, sortie asks IAM nothing", action, n)
		}
	}
}

// iamOf is an IAM client straight to moto, to see what sortie made.
func iamOf(t *testing.T, e *env) *iam.Client {
	t.Helper()
	cfg := awssdk.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")}
	return newIAM(cfg, Config{IAMEndpoint: e.moto.URL})
}

// Without aws.instance_profile, the first launch with buckets makes the
// role sortie-node (trusted by EC2, with the node's S3 permissions and
// nothing else) and the profile holding it; the instances get it; a
// second provider (a restarted controller) finds them and makes nothing.
func nodeProfileMadeOnceAndGiven(t *testing.T, e *env) {
	ctx := testContext(t)
	s := spec(903, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	c := launch(t, e.provider(t), s)

	api := iamOf(t, e)
	role, err := api.GetRole(ctx, &iam.GetRoleInput{RoleName: awssdk.String(NodeRoleName)})
	if err != nil {
		t.Fatal(err)
	}
	trust, _ := url.QueryUnescape(awssdk.ToString(role.Role.AssumeRolePolicyDocument))
	if !strings.Contains(trust, `"Service":"ec2.amazonaws.com"`) || !strings.Contains(trust, "sts:AssumeRole") {
		t.Errorf("trust policy %s; want EC2 to assume the role", trust)
	}
	pol, err := api.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: awssdk.String(NodeRoleName), PolicyName: awssdk.String(NodePolicyName)})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := url.QueryUnescape(awssdk.ToString(pol.PolicyDocument))
	var policy struct {
		Statement []struct {
			Effect   string
			Action   []string
			Resource string
		}
	}
	if err := json.Unmarshal([]byte(doc), &policy); err != nil {
		t.Fatalf("policy %s: %v", doc, err)
	}
	if len(policy.Statement) != 1 || policy.Statement[0].Effect != "Allow" ||
		!slices.Equal(policy.Statement[0].Action, []string{"s3:ListBucket", "s3:GetObject", "s3:PutObject"}) {
		t.Errorf("inline policy %s; want s3:ListBucket, s3:GetObject and s3:PutObject, nothing else", doc)
	}
	prof, err := api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(NodeProfileName)})
	if err != nil || !hasRole(prof.InstanceProfile, NodeRoleName) {
		t.Fatalf("instance profile %+v, %v; want it holding %s", prof, err, NodeRoleName)
	}
	raw, err := testenv.Call(ctx, e.moto.URL, "us-east-1", "DescribeInstances", map[string]string{"InstanceId.1": c.Nodes[0].InstanceID})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "instance-profile/"+NodeProfileName) {
		t.Errorf("the instance has not the profile; moto says:\n%s", raw)
	}

	// A restarted controller: the profile is there, one read and no writes.
	e.proxy.ResetCalls()
	s2 := spec(904, 1, zone("us-east-1b"), spot())
	s2.Buckets = true
	launch(t, e.provider(t), s2)
	if n := e.proxy.Calls("GetInstanceProfile", ""); n != 1 {
		t.Errorf("GetInstanceProfile called %d times, want 1", n)
	}
	for _, action := range []string{"CreateRole", "PutRolePolicy", "CreateInstanceProfile", "AddRoleToInstanceProfile"} {
		if n := e.proxy.Calls(action, ""); n != 0 {
			t.Errorf("%s called %d times when the profile exists, want 0", action, n)
		}
	}
}

// A crash between creating the role and the profile leaves a role alone;
// the next launch makes what is missing and keeps the role.
func nodeProfileFinishesHalfMade(t *testing.T, e *env) {
	ctx := testContext(t)
	api := iamOf(t, e)
	if _, err := api.CreateRole(ctx, &iam.CreateRoleInput{RoleName: awssdk.String(NodeRoleName), AssumeRolePolicyDocument: awssdk.String(nodeTrustPolicy)}); err != nil {
		t.Fatal(err)
	}
	s := spec(905, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	in, err := e.provider(t).runInput(ctx, s, 0)
	if err != nil || awssdk.ToString(in.IamInstanceProfile.Name) != NodeProfileName {
		t.Fatalf("runInput: %+v, %v", in, err)
	}
	if n := e.proxy.Calls("CreateRole", ""); n != 0 {
		t.Errorf("CreateRole called %d times with the role there", n)
	}
	prof, err := api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(NodeProfileName)})
	if err != nil || !hasRole(prof.InstanceProfile, NodeRoleName) {
		t.Fatalf("instance profile %+v, %v; want it holding %s", prof, err, NodeRoleName)
	}
	if _, err := api.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: awssdk.String(NodeRoleName), PolicyName: awssdk.String(NodePolicyName)}); err != nil {
		t.Errorf("the role has no inline policy: %v", err)
	}
}

// Credentials that may not create the role: the launch fails prechecks,
// naming the permission and the way out.
func nodeProfileDeniedSaysWhat(t *testing.T, e *env) {
	ctx := testContext(t)
	e.proxy.FailNext("CreateRole", "AccessDenied", "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: iam:CreateRole")
	s := spec(906, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	_, err := e.provider(t).Launch(ctx, s)
	if provision.Classify(err) != provision.ClassPrechecks {
		t.Fatalf("Launch with CreateRole denied: %v (%s), want a prechecks error", err, provision.Classify(err))
	}
	for _, want := range []string{"iam:CreateRole", "aws.instance_profile", "AccessDenied"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if n := e.proxy.Calls("RunInstances", ""); n != 0 {
		t.Errorf("RunInstances called %d times after the profile failed", n)
	}
}

const profileUnknown = "Value (sortie-node) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name"

// EC2 may refuse a profile IAM has just made: RunInstances is tried again
// while it settles, and the launch succeeds. A profile sortie did not just
// make is refused at once (a wrong name stays wrong), and so is one that
// had its time to settle.
func runInstancesWaitsForNewProfile(t *testing.T, e *env) {
	ctx := testContext(t)
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	p := e.provider(t, func(c *Config) { c.Now = clock.Now; c.Sleep = clock.SkipErr })
	s := spec(907, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	for range 2 {
		e.proxy.FailNext("RunInstances", "InvalidParameterValue", profileUnknown)
	}
	launch(t, p, s)
	if n := e.proxy.Calls("RunInstances", ""); n != 3 {
		t.Errorf("RunInstances called %d times, want 3 (two refusals, then the launch)", n)
	}
	if slept, want := clock.Waits(), []time.Duration{profileRetry, profileRetry}; !slices.Equal(slept[:min(2, len(slept))], want) {
		t.Errorf("slept %v, want %v first", slept, want)
	}

	// The settling time over: the refusal is final.
	clock.Advance(profileSettle)
	e.proxy.ResetCalls()
	e.proxy.FailNext("RunInstances", "InvalidParameterValue", profileUnknown)
	s = spec(908, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	if _, err := p.Launch(ctx, s); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("a refused profile after %s: %v, want a prechecks error", profileSettle, err)
	}
	// A profile found, not made: refused at once.
	other := e.provider(t)
	e.proxy.FailNext("RunInstances", "InvalidParameterValue", profileUnknown)
	s = spec(909, 1, zone("us-east-1a"), spot())
	s.Buckets = true
	if _, err := other.Launch(ctx, s); provision.Classify(err) != provision.ClassPrechecks {
		t.Errorf("a refused profile sortie did not make: %v, want a prechecks error", err)
	}
	if n := e.proxy.Calls("RunInstances", ""); n != 2 {
		t.Errorf("RunInstances called %d times for the two refused launches, want 2", n)
	}
}
