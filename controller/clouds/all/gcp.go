package all

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/provision"
	"sortie/provision/gcp"
	"sortie/provision/node"
	"sortie/provision/price"
)

// GCP is Compute Engine. Credentials are application default credentials.
func GCP() clouds.Cloud {
	cloud := clouds.GCP()
	cloud.Open = func(ctx context.Context, cfg config.Config, log *slog.Logger) (provision.Provider, error) {
		c := GCPConfig(cfg)
		c.Calls, c.Logger = provision.APICallsFrom(ctx), log
		return gcp.New(ctx, c)
	}
	cloud.Check = func(ctx context.Context, cfg config.Config) clouds.Check {
		r, err := gcp.Check(ctx, GCPConfig(cfg))
		return clouds.NewCheck(r.Problems, err, [2]string{"credentials", r.CredentialSource},
			[2]string{"project", r.Project}, [2]string{"regions", strings.Join(r.Regions, ", ")},
			[2]string{"buckets", gcsAccess(ctx, r.Project)})
	}
	cloud.Prices = func(ctx context.Context, cfg config.Config) (price.Fetcher, error) {
		c := GCPConfig(cfg)
		c.BillingEndpoint = cfg.GCP.BillingEndpoint
		return gcp.NewPrices(ctx, c)
	}
	return cloud
}

// gcsAccess says what the credentials may do with Cloud Storage buckets in
// project, as the sync program finds (it links the storage client, the
// controller does not): whether it can list them, create and delete them.
// What it lacks keeps tasks with GCS buckets from launching, not the
// others, so it is a detail, never a problem.
func gcsAccess(ctx context.Context, project string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := []string{"access", "-store", "gcs"}
	if project != "" {
		args = append(args, "-project", project)
	}
	code, msg, err := node.RunSync(ctx, args...)
	switch {
	case err != nil:
		return "not checked: " + err.Error()
	case code == 0:
		return msg
	}
	return "cannot be listed, so tasks with GCS buckets cannot launch: " + msg
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
