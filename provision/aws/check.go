package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// CheckResult is what `sortie check` reports about AWS.
type CheckResult struct {
	// CredentialSource says where the credentials came from (environment,
	// shared config profile, SSO...), as the SDK names it; empty when none.
	CredentialSource string
	// EnabledRegions are the regions the account may use.
	EnabledRegions []string
	// Regions are the configured regions that are enabled: where sortie
	// will launch.
	Regions []string
	// Problems says what is missing, each with its fix; empty means usable.
	Problems []string
	// Buckets says whether the credentials can list S3 buckets, and
	// InstanceProfile what the instances of a task with buckets get; what
	// they lack keeps tasks with buckets from launching, not the others.
	Buckets, InstanceProfile string
}

// OK reports whether AWS is usable.
func (r CheckResult) OK() bool { return len(r.Problems) == 0 }

// Check resolves the credentials through the standard chain (or the
// configured profile) and asks EC2 which regions the account has enabled.
// The error is for a check that could not run at all; what a user must fix
// is in Problems.
func Check(ctx context.Context, cfg Config) (CheckResult, error) {
	cfg = withDefaults(cfg)
	var res CheckResult
	awsCfg, err := loadAWSConfig(ctx, cfg)
	if err != nil {
		res.Problems = append(res.Problems, fmt.Sprintf("%v; check AWS_PROFILE, AWS_CONFIG_FILE and ~/.aws/config", err))
		return res, nil
	}
	creds, err := awsCfg.Credentials.Retrieve(ctx)
	if err != nil {
		where := "the standard chain (environment, shared config, SSO, instance role)"
		if cfg.Profile != "" {
			where = fmt.Sprintf("profile %q", cfg.Profile)
		}
		res.Problems = append(res.Problems, fmt.Sprintf(
			"no AWS credentials from %s: %v; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, choose a profile with AWS_PROFILE or aws.profile in config.yaml, or run `aws sso login`",
			where, err))
		return res, nil
	}
	res.CredentialSource = creds.Source
	api := ec2.NewFromConfig(awsCfg, func(o *ec2.Options) {
		o.Region = cfg.Regions[0]
		if cfg.Endpoint != "" {
			o.BaseEndpoint = awssdk.String(cfg.Endpoint)
		}
	})
	out, err := api.DescribeRegions(ctx, &ec2.DescribeRegionsInput{AllRegions: awssdk.Bool(true)})
	if err != nil {
		switch code := apiCode(err); {
		case code == "AuthFailure" || code == "InvalidClientTokenId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken":
			res.Problems = append(res.Problems, fmt.Sprintf("AWS rejected the credentials from %s (%s): %v; renew or replace them",
				creds.Source, code, err))
		case code == "UnauthorizedOperation":
			res.Problems = append(res.Problems, fmt.Sprintf("the credentials from %s may not call ec2:DescribeRegions: %v; grant sortie's user EC2 access (RunInstances, DescribeInstances, TerminateInstances, CreateTags, Describe*, ImportKeyPair, CreateSecurityGroup, AuthorizeSecurityGroupIngress)",
				creds.Source, err))
		case code == "":
			return res, fmt.Errorf("ask EC2 for regions: %w", err)
		default:
			res.Problems = append(res.Problems, fmt.Sprintf("EC2 DescribeRegions failed (%s): %v", code, err))
		}
		return res, nil
	}
	res.Buckets, res.InstanceProfile = checkBuckets(ctx, awsCfg, cfg)
	status := map[string]string{}
	for _, r := range out.Regions {
		name, opt := awssdk.ToString(r.RegionName), awssdk.ToString(r.OptInStatus)
		status[name] = opt
		if opt == "" || opt == "opt-in-not-required" || opt == "opted-in" {
			res.EnabledRegions = append(res.EnabledRegions, name)
		}
	}
	slices.Sort(res.EnabledRegions)
	for _, r := range cfg.Regions {
		opt, known := status[r]
		switch {
		case !known:
			res.Problems = append(res.Problems, fmt.Sprintf("aws.regions: %q is not an AWS region; known: %s", r, strings.Join(res.EnabledRegions, ", ")))
		case slices.Contains(res.EnabledRegions, r):
			res.Regions = append(res.Regions, r)
		default:
			res.Problems = append(res.Problems, fmt.Sprintf("aws.regions: %s is not enabled for this account (opt-in status %s); enable it in the AWS console under Account > AWS Regions, or remove it from aws.regions", r, opt))
		}
	}
	return res, nil
}
