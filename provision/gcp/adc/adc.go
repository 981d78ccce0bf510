// Package adc finds Google application default credentials and the
// project the way the client libraries do: the file named by
// GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default credentials
// file, then the metadata server of a Compute Engine VM. It reads the
// environment and local files, and asks the metadata server only through
// the functions it is given, so that a launch can ask it every time; it
// links no SDK, as the CLI asks it too.
package adc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Machine is what Find reads of the machine.
type Machine struct {
	Getenv func(string) string
	// Home is the user's home directory.
	Home string
	// OnGCE says whether the machine is a Compute Engine VM whose metadata
	// server gives the VM's service account.
	OnGCE func(ctx context.Context) bool
	// MetadataProject asks the metadata server for the VM's project; nil
	// leaves it unasked, the VM's project counting as found.
	MetadataProject func(ctx context.Context) string
}

// Found is where the credentials and the project come from, and what is
// missing.
type Found struct {
	// Credentials says where they were found (a file path, "metadata
	// server"), or why none are needed; Account is their type and, when
	// the file names it, the service account's e-mail.
	Credentials, Account string
	// Project is the project sortie would use, and ProjectSource where it
	// came from ("config (gcp.project)", "GOOGLE_CLOUD_PROJECT", a file
	// path, ...).
	Project, ProjectSource string
	// Problems each name a missing piece and how to supply it; empty
	// means usable.
	Problems []string
}

// Find looks for the credentials and the project of a provider with the
// given API endpoint ("" for Google's; an emulator needs no credentials)
// and configured project ("" to find one).
func Find(ctx context.Context, m Machine, endpoint, project string) Found {
	var f Found
	var fileProject, metaProject string
	onGCE := false
	gcloudDir := m.Getenv("CLOUDSDK_CONFIG")
	if gcloudDir == "" && m.Home != "" {
		gcloudDir = filepath.Join(m.Home, ".config", "gcloud")
	}
	switch {
	case endpoint != "":
		f.Credentials = "none needed: API endpoint " + endpoint
	case m.Getenv("GOOGLE_APPLICATION_CREDENTIALS") != "":
		path := m.Getenv("GOOGLE_APPLICATION_CREDENTIALS")
		cf, err := readCredentials(path)
		if err != nil {
			f.Problems = append(f.Problems, fmt.Sprintf("GOOGLE_APPLICATION_CREDENTIALS=%s: %v; point it at a service account key or run `gcloud auth application-default login` and unset it", path, err))
			break
		}
		f.Credentials, f.Account, fileProject = path, account(cf), firstOf(cf.ProjectID, cf.QuotaProjectID)
	default:
		path := filepath.Join(gcloudDir, "application_default_credentials.json")
		if cf, err := readCredentials(path); err == nil {
			f.Credentials, f.Account, fileProject = path, account(cf), firstOf(cf.ProjectID, cf.QuotaProjectID)
			break
		} else if !os.IsNotExist(err) {
			f.Problems = append(f.Problems, fmt.Sprintf("%s: %v; run `gcloud auth application-default login` to write it again", path, err))
			break
		}
		if m.OnGCE(ctx) {
			onGCE = true
			f.Credentials, f.Account = "metadata server", "the VM's service account"
			if m.MetadataProject != nil {
				metaProject = m.MetadataProject(ctx)
			}
			break
		}
		f.Problems = append(f.Problems, "no application default credentials: run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file")
	}

	for _, c := range []struct{ value, source string }{
		{project, "config (gcp.project)"},
		{m.Getenv("GOOGLE_CLOUD_PROJECT"), "GOOGLE_CLOUD_PROJECT"},
		{m.Getenv("CLOUDSDK_CORE_PROJECT"), "CLOUDSDK_CORE_PROJECT"},
		{fileProject, f.Credentials},
		{gcloudProject(gcloudDir), "gcloud config (core/project)"},
		{metaProject, "metadata server"},
	} {
		if c.value != "" {
			f.Project, f.ProjectSource = c.value, c.source
			break
		}
	}
	switch {
	case f.Project != "":
	case onGCE && m.MetadataProject == nil:
		f.ProjectSource = "metadata server (not asked)"
	default:
		f.Problems = append(f.Problems, "no project: set gcp.project in config.yaml, or GOOGLE_CLOUD_PROJECT, or run `gcloud config set project PROJECT_ID`")
	}
	return f
}

// MachineSaysGCE says whether the machine says it is a Compute Engine VM,
// without asking the metadata server: its firmware's product name, or
// GCE_METADATA_HOST naming a metadata server. readFile reads the
// machine's files.
func MachineSaysGCE(getenv func(string) string, readFile func(string) ([]byte, error)) bool {
	if getenv("GCE_METADATA_HOST") != "" {
		return true
	}
	b, _ := readFile("/sys/class/dmi/id/product_name")
	name := strings.TrimSpace(string(b))
	return name == "Google" || name == "Google Compute Engine"
}

// credentialsFile is the part of an application default credentials file
// Find reads.
type credentialsFile struct {
	Type           string `json:"type"`
	ProjectID      string `json:"project_id"`
	QuotaProjectID string `json:"quota_project_id"`
	ClientEmail    string `json:"client_email"`
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
