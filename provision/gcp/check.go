package gcp

import (
	"context"
	"os"

	"cloud.google.com/go/compute/metadata"

	"sortie/provision/gcp/adc"
)

// CheckResult says whether sortie can use Compute Engine, and if not,
// exactly what is missing.
type CheckResult struct {
	// Project is the project sortie would use, and ProjectSource where it
	// came from ("config", "GOOGLE_CLOUD_PROJECT", a file path, ...).
	Project       string
	ProjectSource string
	// CredentialSource says where application default credentials were
	// found (a file path, "metadata server"), or why none are needed.
	CredentialSource string
	// Account is the credentials' type and, when the file names it, the
	// service account's e-mail.
	Account string
	// Regions are the regions sortie would use.
	Regions []string
	// Problems each name a missing piece and how to supply it; empty
	// means usable.
	Problems []string
}

// OK reports whether Compute Engine is usable.
func (r CheckResult) OK() bool { return len(r.Problems) == 0 }

// Check looks for application default credentials and a project the way
// the client libraries do, without calling the API: the file named by
// GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default credentials
// file, then the metadata server, which is only asked when this machine
// says it is a Compute Engine VM (so that a laptop never waits on it).
// The error is for a check that could not run at all; what a user must
// fix is in Problems.
func Check(ctx context.Context, cfg Config) (CheckResult, error) {
	return check(ctx, osEnv(), cfg), nil
}

// machineEnv is what Check reads of the machine; tests give their own.
type machineEnv = adc.Machine

func osEnv() machineEnv {
	home, _ := os.UserHomeDir()
	return machineEnv{Getenv: os.Getenv, Home: home, OnGCE: metadataServer, MetadataProject: func(ctx context.Context) string {
		project, _ := metadata.ProjectIDWithContext(ctx)
		return project
	}}
}

// metadataServer asks the metadata server only when the DMI product name
// or GCE_METADATA_HOST says there is one.
func metadataServer(ctx context.Context) bool {
	return adc.MachineSaysGCE(os.Getenv, os.ReadFile) && metadata.OnGCEWithContext(ctx)
}

func check(ctx context.Context, e machineEnv, cfg Config) CheckResult {
	f := adc.Find(ctx, e, cfg.Endpoint, cfg.Project)
	regions := cfg.Regions
	if len(regions) == 0 {
		regions = DefaultRegions()
	}
	return CheckResult{
		Project: f.Project, ProjectSource: f.ProjectSource,
		CredentialSource: f.Credentials, Account: f.Account,
		Regions: regions, Problems: f.Problems,
	}
}
