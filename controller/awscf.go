package controller

import (
	"context"

	"sortie/provision"
	"sortie/provision/aws"
)

// AWSConfig maps the aws: and ssh: sections onto the EC2 provider's config.
func AWSConfig(cfg Config) aws.Config {
	return aws.Config{
		Home: cfg.Home, Regions: cfg.AWS.Regions, Endpoint: cfg.AWS.Endpoint, Profile: cfg.AWS.Profile,
		SSHUser: cfg.AWS.SSHUser, ProxyCommand: cfg.SSH.ProxyCommand, NodeDirRoot: cfg.AWS.NodeDir,
		LaunchTimeout: cfg.AWS.LaunchTimeout.D(), PollInterval: cfg.AWS.PollInterval.D(), RetryMaxAttempts: cfg.AWS.RetryMaxAttempts,
	}
}

// OpenAWS opens the EC2 provider for the daemon; credentials come from the
// standard chain (environment, profile, SSO, instance role).
func OpenAWS(ctx context.Context, cfg Config) (provision.Provider, error) {
	return aws.New(ctx, AWSConfig(cfg))
}
