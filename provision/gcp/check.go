package gcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cloud.google.com/go/compute/metadata"
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
type machineEnv struct {
	getenv func(string) string
	home   string
	// onGCE reports whether the machine is a Compute Engine VM with a
	// metadata server, and its project id.
	onGCE func(ctx context.Context) (bool, string)
}

func osEnv() machineEnv {
	home, _ := os.UserHomeDir()
	return machineEnv{getenv: os.Getenv, home: home, onGCE: metadataServer}
}

// metadataServer asks the metadata server only when the DMI product name
// or GCE_METADATA_HOST says there is one.
func metadataServer(ctx context.Context) (bool, string) {
	b, _ := os.ReadFile("/sys/class/dmi/id/product_name")
	name := strings.TrimSpace(string(b))
	if os.Getenv("GCE_METADATA_HOST") == "" && name != "Google" && name != "Google Compute Engine" {
		return false, ""
	}
	if !metadata.OnGCEWithContext(ctx) {
		return false, ""
	}
	project, _ := metadata.ProjectIDWithContext(ctx)
	return true, project
}

// found is what detect learned.
type found struct {
	credentials, account   string
	project, projectSource string
	problems               []string
}

func check(ctx context.Context, e machineEnv, cfg Config) CheckResult {
	f := detect(ctx, e, cfg)
	regions := cfg.Regions
	if len(regions) == 0 {
		regions = DefaultRegions()
	}
	return CheckResult{
		Project: f.project, ProjectSource: f.projectSource,
		CredentialSource: f.credentials, Account: f.account,
		Regions: regions, Problems: f.problems,
	}
}

// credentialsFile is the part of an application default credentials file
// Check reads.
type credentialsFile struct {
	Type           string `json:"type"`
	ProjectID      string `json:"project_id"`
	QuotaProjectID string `json:"quota_project_id"`
	ClientEmail    string `json:"client_email"`
}

func detect(ctx context.Context, e machineEnv, cfg Config) found {
	var f found
	var fileProject, metaProject string
	gcloudDir := e.getenv("CLOUDSDK_CONFIG")
	if gcloudDir == "" && e.home != "" {
		gcloudDir = filepath.Join(e.home, ".config", "gcloud")
	}
	switch {
	case cfg.Endpoint != "":
		f.credentials = "none needed: API endpoint " + cfg.Endpoint
	case e.getenv("GOOGLE_APPLICATION_CREDENTIALS") != "":
		path := e.getenv("GOOGLE_APPLICATION_CREDENTIALS")
		cf, err := readCredentials(path)
		if err != nil {
			f.problems = append(f.problems, fmt.Sprintf("GOOGLE_APPLICATION_CREDENTIALS=%s: %v; point it at a service account key or run `gcloud auth application-default login` and unset it", path, err))
			break
		}
		f.credentials, f.account, fileProject = path, account(cf), firstOf(cf.ProjectID, cf.QuotaProjectID)
	default:
		path := filepath.Join(gcloudDir, "application_default_credentials.json")
		if cf, err := readCredentials(path); err == nil {
			f.credentials, f.account, fileProject = path, account(cf), firstOf(cf.ProjectID, cf.QuotaProjectID)
			break
		} else if !os.IsNotExist(err) {
			f.problems = append(f.problems, fmt.Sprintf("%s: %v; run `gcloud auth application-default login` to write it again", path, err))
			break
		}
		if ok, project := e.onGCE(ctx); ok {
			f.credentials, f.account, metaProject = "metadata server", "the VM's service account", project
			break
		}
		f.problems = append(f.problems, "no application default credentials: run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file")
	}

	for _, c := range []struct{ value, source string }{
		{cfg.Project, "config (gcp.project)"},
		{e.getenv("GOOGLE_CLOUD_PROJECT"), "GOOGLE_CLOUD_PROJECT"},
		{e.getenv("CLOUDSDK_CORE_PROJECT"), "CLOUDSDK_CORE_PROJECT"},
		{fileProject, f.credentials},
		{gcloudProject(gcloudDir), "gcloud config (core/project)"},
		{metaProject, "metadata server"},
	} {
		if c.value != "" {
			f.project, f.projectSource = c.value, c.source
			break
		}
	}
	if f.project == "" {
		f.problems = append(f.problems, "no project: set gcp.project in config.yaml, or GOOGLE_CLOUD_PROJECT, or run `gcloud config set project PROJECT_ID`")
	}
	return f
}

func readCredentials(path string) (credentialsFile, error) {
	var cf credentialsFile
	b, err := os.ReadFile(path)
	if err != nil {
		return cf, err
	}
	if err := json.Unmarshal(b, &cf); err != nil {
		return cf, fmt.Errorf("not a credentials file: %w", err)
	}
	switch cf.Type {
	case "service_account", "authorized_user", "external_account", "impersonated_service_account",
		"external_account_authorized_user", "gdch_service_account":
		return cf, nil
	case "":
		return cf, fmt.Errorf("not a credentials file: no \"type\"")
	}
	return cf, fmt.Errorf("credentials of unknown type %q", cf.Type)
}

func account(cf credentialsFile) string {
	if cf.ClientEmail != "" {
		return cf.Type + " " + cf.ClientEmail
	}
	return cf.Type
}

// gcloudProject reads core/project from gcloud's active configuration.
func gcloudProject(dir string) string {
	if dir == "" {
		return ""
	}
	active := "default"
	if b, err := os.ReadFile(filepath.Join(dir, "active_config")); err == nil && strings.TrimSpace(string(b)) != "" {
		active = strings.TrimSpace(string(b))
	}
	fh, err := os.Open(filepath.Join(dir, "configurations", "config_"+active))
	if err != nil {
		return ""
	}
	defer fh.Close()
	section := ""
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && section == "core" && strings.TrimSpace(k) == "project" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
