package all

import (
	"context"
	"log/slog"
	"strings"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/aws"
	"sortie/provision/price"
)

// AWS is EC2. Credentials come from the standard chain (environment,
// profile, SSO, instance role).
func AWS() clouds.Cloud {
	cloud := clouds.AWS()
	cloud.Open = func(ctx context.Context, cfg config.Config, log *slog.Logger) (provision.Provider, error) {
		c := AWSConfig(cfg)
		c.Calls, c.Logger = provision.APICallsFrom(ctx), log
		return aws.New(ctx, c)
	}
	cloud.Check = func(ctx context.Context, cfg config.Config) clouds.Check {
		// What a launch would refuse the cloud for, and then nothing
		// asked of the cloud.
		if _, err := cloud.Enabled(cfg, clouds.Machine{}); err != nil {
			return clouds.NewCheck([]string{err.Error()}, nil)
		}
		r, err := aws.Check(ctx, AWSConfig(cfg))
		return clouds.NewCheck(r.Problems, err,
			[2]string{"credentials", r.CredentialSource}, [2]string{"regions", strings.Join(r.Regions, ", ")},
			[2]string{"buckets", r.Buckets}, [2]string{"instance profile", r.InstanceProfile})
	}
	cloud.Prices = func(ctx context.Context, cfg config.Config) (price.Fetcher, error) {
		c := AWSConfig(cfg)
		c.PricingEndpoint = cfg.AWS.PricingEndpoint
		return aws.NewPrices(ctx, c)
	}
	return cloud
}

// AWSConfig maps the aws: and ssh: sections onto the EC2 provider's config.
func AWSConfig(cfg config.Config) aws.Config {
	return aws.Config{
		Home: cfg.Home, Regions: cfg.AWS.Regions, Endpoint: cfg.AWS.Endpoint, Profile: cfg.AWS.Profile,
		SSHUser: cfg.AWS.SSHUser, ProxyCommand: cfg.SSH.ProxyCommand, NodeDirRoot: cfg.AWS.NodeDir,
		LaunchTimeout: cfg.AWS.LaunchTimeout.D(), PollInterval: cfg.AWS.PollInterval.D(), RetryMaxAttempts: cfg.AWS.RetryMaxAttempts,
		InstanceProfile: cfg.AWS.InstanceProfile,
		// Every tick shard's status call within a poll interval shares one
		// DescribeInstances per region.
		StatusMaxAge: cfg.Controller.PollInterval.D(),
	}
}
