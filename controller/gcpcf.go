package controller

import (
	"context"
	"strings"

	"sortie/provision"
	"sortie/provision/gcp"
)

// GCPConfig maps the gcp: and ssh: sections onto the Compute Engine
// provider's config.
func GCPConfig(cfg Config) gcp.Config {
	return gcp.Config{
		Home: cfg.Home, Project: cfg.GCP.Project, Regions: cfg.GCP.Regions, Endpoint: cfg.GCP.Endpoint,
		SSHUser: cfg.GCP.SSHUser, ProxyCommand: cfg.SSH.ProxyCommand, NodeDirRoot: cfg.GCP.NodeDir,
		TerminationAction: strings.ToUpper(cfg.GCP.TerminationAction),
		PollInterval:      cfg.GCP.PollInterval.D(), LaunchTimeout: cfg.GCP.LaunchTimeout.D(),
	}
}

// OpenGCP opens the Compute Engine provider for the daemon; credentials are
// application default credentials.
func OpenGCP(ctx context.Context, cfg Config) (provision.Provider, error) {
	return gcp.New(ctx, GCPConfig(cfg))
}

// CheckGCP says whether application default credentials and a project are
// available.
func CheckGCP(ctx context.Context, cfg Config) CloudCheck {
	r, err := gcp.Check(ctx, GCPConfig(cfg))
	c := CloudCheck{Problems: r.Problems}
	if err != nil {
		c.Problems = append(c.Problems, err.Error())
	}
	if r.CredentialSource != "" {
		c.Details = append(c.Details, "credentials: "+r.CredentialSource)
	}
	if r.Project != "" {
		c.Details = append(c.Details, "project: "+r.Project)
	}
	if len(r.Regions) > 0 {
		c.Details = append(c.Details, "regions: "+strings.Join(r.Regions, ", "))
	}
	return c
}
