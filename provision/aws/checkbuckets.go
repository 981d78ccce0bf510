package aws

import (
	"context"
	"fmt"
	"os"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// nodeProfileWrites are the IAM permissions sortie's first launch with
// buckets needs when aws.instance_profile is unset; iam:PassRole is
// RunInstances' (giving the role to the instances), every launch.
const nodeProfileWrites = "iam:CreateRole, iam:TagRole, iam:PutRolePolicy, iam:CreateInstanceProfile, iam:TagInstanceProfile, iam:AddRoleToInstanceProfile and iam:PassRole"

// checkBuckets says whether the credentials can list S3 buckets (S3 at
// AWS_ENDPOINT_URL_S3 when set, as the sync program uses it) and what
// the instances of a task with buckets would get: the configured
// instance profile, or sortie's, found or still to be made. It asks the
// read APIs only; what failed is named by its permission.
func checkBuckets(ctx context.Context, awsCfg awssdk.Config, cfg Config) (buckets, profile string) {
	pathStyle := os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	s3c := s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = pathStyle })
	out, err := s3c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		buckets = fmt.Sprintf("S3 refused s3:ListAllMyBuckets (%v); tasks with s3:// buckets need credentials that may list and read them (see the README's Buckets and checkpoints)", err)
	} else {
		buckets = fmt.Sprintf("the credentials list S3 buckets (%d)", len(out.Buckets))
	}
	return buckets, checkProfile(ctx, newIAM(awsCfg, cfg), cfg.InstanceProfile)
}

// checkProfile describes the instance profile of tasks with buckets.
func checkProfile(ctx context.Context, api iamAPI, configured string) string {
	name := configured
	if name == "" {
		name = NodeProfileName
	}
	// An ARN: arn:aws:iam::ACCOUNT:instance-profile[/PATH]/NAME.
	if strings.HasPrefix(name, "arn:") {
		name = name[strings.LastIndex(name, "/")+1:]
	}
	out, err := api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(name)})
	switch {
	case err == nil:
		var roles []string
		for _, r := range out.InstanceProfile.Roles {
			roles = append(roles, awssdk.ToString(r.RoleName))
		}
		if len(roles) == 0 {
			return fmt.Sprintf("%s holds no role: its instances would get no credentials; add one (aws iam add-role-to-instance-profile)", name)
		}
		return fmt.Sprintf("%s (role %s) exists; launches give it with iam:PassRole", name, strings.Join(roles, ", "))
	case isIAM(err, "NoSuchEntity") && configured != "":
		return fmt.Sprintf("aws.instance_profile %s does not exist in this account: tasks with buckets would end FAILED_PRECHECKS; create it, or unset aws.instance_profile for sortie's own", configured)
	case isIAM(err, "NoSuchEntity"):
		if _, err := api.GetRole(ctx, &iam.GetRoleInput{RoleName: awssdk.String(NodeRoleName)}); err != nil && !isIAM(err, "NoSuchEntity") {
			return fmt.Sprintf("IAM refused iam:GetRole on %s (%v); the first launch with buckets makes the role and profile %s and needs it and %s, or set aws.instance_profile",
				NodeRoleName, err, NodeProfileName, nodeProfileWrites)
		}
		return fmt.Sprintf("%s does not exist yet; the first launch with buckets makes it, which needs %s (not checked until then), or set aws.instance_profile",
			NodeProfileName, nodeProfileWrites)
	}
	fix := "grant it"
	if configured == "" {
		fix = "grant it and " + nodeProfileWrites
	}
	return fmt.Sprintf("IAM refused iam:GetInstanceProfile on %s (%v); %s, or set aws.instance_profile to a profile an administrator made", name, err, fix)
}
