package all

import (
	"context"
	"strings"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/gcp"
)

// GCP is Compute Engine. Credentials are application default credentials.
func GCP() clouds.Cloud {
	return clouds.Cloud{
		Name: "gcp",
		Open: func(ctx context.Context, cfg config.Config) (provision.Provider, error) {
			return gcp.New(ctx, GCPConfig(cfg))
		},
		Check: func(ctx context.Context, cfg config.Config) clouds.Check {
			r, err := gcp.Check(ctx, GCPConfig(cfg))
			c := clouds.Check{Problems: r.Problems}
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
		},
	}
}

// GCPConfig maps the gcp: and ssh: sections onto the Compute Engine
// provider's config.
func GCPConfig(cfg config.Config) gcp.Config {
	return gcp.Config{
		Home: cfg.Home, Project: cfg.GCP.Project, Regions: cfg.GCP.Regions, Endpoint: cfg.GCP.Endpoint,
		SSHUser: cfg.GCP.SSHUser, ProxyCommand: cfg.SSH.ProxyCommand, NodeDirRoot: cfg.GCP.NodeDir,
		TerminationAction: strings.ToUpper(cfg.GCP.TerminationAction),
		PollInterval:      cfg.GCP.PollInterval.D(), LaunchTimeout: cfg.GCP.LaunchTimeout.D(),
	}
}
