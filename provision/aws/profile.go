package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"sortie/provision"
)

// The IAM role and instance profile sortie creates for the instances of a
// task with buckets when aws.instance_profile names none. They are shared
// by every job of the account and never deleted by sortie.
const (
	NodeRoleName    = "sortie-node"
	NodeProfileName = "sortie-node"
	// NodePolicyName is the role's inline policy.
	NodePolicyName = "sortie-buckets"
)

// NodeActions are the S3 permissions the node role gets: what a node's
// sync program does (list and download a bucket prefix, upload what
// changed). Creating and deleting buckets is the controller's, with its
// own credentials.
func NodeActions() []string { return []string{"s3:ListBucket", "s3:GetObject", "s3:PutObject"} }

// nodeTrustPolicy lets EC2 instances assume the role.
const nodeTrustPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`

// nodePolicy is the role's inline policy: NodeActions on every bucket,
// since the one role serves every job's buckets.
func nodePolicy() string {
	return `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["` +
		strings.Join(NodeActions(), `","`) + `"],"Resource":"*"}]}`
}

// profileSettle is how long after sortie created the instance profile
// RunInstances may still refuse it: IAM is eventually consistent, and EC2
// may not see a new profile for some seconds.
const profileSettle = 2 * time.Minute

// profileRetry is the pause between RunInstances tries while a new
// profile settles.
const profileRetry = 2 * time.Second

// iamAPI is the part of IAM sortie uses; *iam.Client implements it.
type iamAPI interface {
	GetRole(context.Context, *iam.GetRoleInput, ...func(*iam.Options)) (*iam.GetRoleOutput, error)
	CreateRole(context.Context, *iam.CreateRoleInput, ...func(*iam.Options)) (*iam.CreateRoleOutput, error)
	PutRolePolicy(context.Context, *iam.PutRolePolicyInput, ...func(*iam.Options)) (*iam.PutRolePolicyOutput, error)
	GetRolePolicy(context.Context, *iam.GetRolePolicyInput, ...func(*iam.Options)) (*iam.GetRolePolicyOutput, error)
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	CreateInstanceProfile(context.Context, *iam.CreateInstanceProfileInput, ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error)
	AddRoleToInstanceProfile(context.Context, *iam.AddRoleToInstanceProfileInput, ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error)
}

// iamClient is the provider's IAM client (IAM is global: one for all
// regions).
func (p *Provider) iamClient() iamAPI {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.iam == nil {
		p.iam = newIAM(p.aws, p.cfg)
	}
	return p.iam
}

func newIAM(awsCfg awssdk.Config, cfg Config) *iam.Client {
	return iam.NewFromConfig(awsCfg, func(o *iam.Options) {
		if cfg.IAMEndpoint != "" {
			o.BaseEndpoint = awssdk.String(cfg.IAMEndpoint)
		}
		if cfg.Calls != nil {
			o.APIOptions = append(o.APIOptions, countCalls(cfg.Calls))
		}
	})
}

// instanceProfile is the profile the instances of a task with buckets
// get: aws.instance_profile when set (a name or an ARN), else sortie's
// own, created the first time it is needed.
func (p *Provider) instanceProfile(ctx context.Context) (*types.IamInstanceProfileSpecification, error) {
	if name := p.cfg.InstanceProfile; name != "" {
		if strings.HasPrefix(name, "arn:") {
			return &types.IamInstanceProfileSpecification{Arn: awssdk.String(name)}, nil
		}
		return &types.IamInstanceProfileSpecification{Name: awssdk.String(name)}, nil
	}
	if err := p.ensureNodeProfile(ctx); err != nil {
		return nil, err
	}
	return &types.IamInstanceProfileSpecification{Name: awssdk.String(NodeProfileName)}, nil
}

// ensureNodeProfile makes sortie's role (trusted by EC2, with the inline
// S3 policy) and its instance profile, once per provider: what exists is
// kept, so two controllers, or a rerun after a crash half-way, end with
// the one role and profile.
func (p *Provider) ensureNodeProfile(ctx context.Context) error {
	p.profileMu.Lock()
	defer p.profileMu.Unlock()
	if p.profileReady {
		return nil
	}
	api := p.iamClient()
	prof, err := api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(NodeProfileName)})
	if err == nil && hasRole(prof.InstanceProfile, NodeRoleName) {
		p.profileReady = true
		return nil
	}
	if err != nil && !isIAM(err, "NoSuchEntity") {
		return iamError("iam:GetInstanceProfile", err)
	}
	if _, err := api.GetRole(ctx, &iam.GetRoleInput{RoleName: awssdk.String(NodeRoleName)}); isIAM(err, "NoSuchEntity") {
		_, err = api.CreateRole(ctx, &iam.CreateRoleInput{
			RoleName:                 awssdk.String(NodeRoleName),
			AssumeRolePolicyDocument: awssdk.String(nodeTrustPolicy),
			Description:              awssdk.String("sortie's nodes: read and write the buckets of their tasks"),
			Tags:                     []iamtypes.Tag{{Key: awssdk.String(provision.TagManaged), Value: awssdk.String("true")}},
		})
		if err != nil && !isIAM(err, "EntityAlreadyExists") {
			return iamError("iam:CreateRole", err)
		}
	} else if err != nil {
		return iamError("iam:GetRole", err)
	}
	if _, err := api.PutRolePolicy(ctx, &iam.PutRolePolicyInput{
		RoleName: awssdk.String(NodeRoleName), PolicyName: awssdk.String(NodePolicyName), PolicyDocument: awssdk.String(nodePolicy()),
	}); err != nil {
		return iamError("iam:PutRolePolicy", err)
	}
	if prof == nil || prof.InstanceProfile == nil {
		_, err := api.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: awssdk.String(NodeProfileName),
			Tags:                []iamtypes.Tag{{Key: awssdk.String(provision.TagManaged), Value: awssdk.String("true")}},
		})
		if err != nil && !isIAM(err, "EntityAlreadyExists") {
			return iamError("iam:CreateInstanceProfile", err)
		}
	}
	_, err = api.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
		InstanceProfileName: awssdk.String(NodeProfileName), RoleName: awssdk.String(NodeRoleName),
	})
	// LimitExceeded: the profile holds a role already (one at most); it is
	// ours when another controller got there first.
	if err != nil && isIAM(err, "LimitExceeded") {
		prof, gerr := api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: awssdk.String(NodeProfileName)})
		if gerr == nil && hasRole(prof.InstanceProfile, NodeRoleName) {
			err = nil
		} else if gerr == nil {
			return provision.Prechecks(fmt.Errorf("instance profile %s holds another role than %s; remove that role from it (aws iam remove-role-from-instance-profile), or set aws.instance_profile",
				NodeProfileName, NodeRoleName))
		}
	}
	if err != nil {
		return iamError("iam:AddRoleToInstanceProfile", err)
	}
	p.logger(ctx).Info("created the instance profile of nodes with buckets", "profile", NodeProfileName, "role", NodeRoleName)
	p.profileReady = true
	p.profileMadeAt = p.cfg.Now()
	return nil
}

func hasRole(prof *iamtypes.InstanceProfile, role string) bool {
	return prof != nil && slices.ContainsFunc(prof.Roles, func(r iamtypes.Role) bool { return awssdk.ToString(r.RoleName) == role })
}

// isIAM reports whether err is the IAM error code.
func isIAM(err error, code string) bool { return err != nil && apiCode(err) == code }

// iamError names the permission a refused IAM call needed and what to do;
// other errors are worth a retry.
func iamError(action string, err error) error {
	err = fmt.Errorf("%s on %s: %w", action, NodeRoleName, err)
	switch apiCode(err) {
	case "AccessDenied", "AccessDeniedException", "UnauthorizedOperation":
		return provision.Prechecks(fmt.Errorf("%w; the instances of a task with buckets need an instance profile: grant sortie's credentials %s (see the README's Buckets and checkpoints), or set aws.instance_profile to a profile an administrator made",
			err, action))
	}
	return classify(err)
}

// profileNotYetSeen reports whether RunInstances refused the instance
// profile as unknown, which a freshly made profile may be for a while.
func profileNotYetSeen(err error) bool {
	var ae interface{ ErrorMessage() string }
	if !errors.As(err, &ae) {
		return false
	}
	code := apiCode(err)
	return (code == "InvalidParameterValue" || code == "InvalidParameter") &&
		strings.Contains(strings.ToLower(ae.ErrorMessage()), "iaminstanceprofile")
}

// settling reports whether sortie made the instance profile so recently
// that EC2 may not know it yet.
func (p *Provider) settling() bool {
	p.profileMu.Lock()
	defer p.profileMu.Unlock()
	return !p.profileMadeAt.IsZero() && p.cfg.Now().Before(p.profileMadeAt.Add(profileSettle))
}

// runInstances calls RunInstances, and again every profileRetry while EC2
// refuses the instance profile sortie has just made.
func (p *Provider) runInstances(ctx context.Context, region string, in *ec2.RunInstancesInput) (*ec2.RunInstancesOutput, error) {
	for {
		out, err := p.client(region).RunInstances(ctx, in)
		if err == nil || in.IamInstanceProfile == nil || !profileNotYetSeen(err) || !p.settling() {
			return out, err
		}
		p.logger(ctx).Info("EC2 does not see the new instance profile yet; trying again", "profile", NodeProfileName, "err", err)
		provision.Progress(ctx, fmt.Sprintf("waiting for EC2 to see the new instance profile %s", NodeProfileName))
		if err := p.cfg.Sleep(ctx, profileRetry); err != nil {
			return nil, err
		}
	}
}
