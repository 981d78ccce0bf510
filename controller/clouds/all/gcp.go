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
			c := GCPConfig(cfg)
			c.Calls = provision.APICallsFrom(ctx)
			return gcp.New(ctx, c)
		},
		Check: func(ctx context.Context, cfg config.Config) clouds.Check {
			r, err := gcp.Check(ctx, GCPConfig(cfg))
			return clouds.NewCheck(r.Problems, err, [2]string{"credentials", r.CredentialSource},
				[2]string{"project", r.Project}, [2]string{"regions", strings.Join(r.Regions, ", ")})
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
		ServiceAccount:    cfg.GCP.ServiceAccount,
		PollInterval:      cfg.GCP.PollInterval.D(), LaunchTimeout: cfg.GCP.LaunchTimeout.D(),
		StatusMaxAge: cfg.Controller.PollInterval.D(),
	}
}
