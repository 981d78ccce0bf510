package gcp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeMachine is a machine for Check: environment variables, a home
// directory, and whether a metadata server answers.
type fakeMachine struct {
	vars  map[string]string
	home  string
	onGCE bool
	asked bool
}

func (m *fakeMachine) env() machineEnv {
	return machineEnv{
		Getenv: func(k string) string { return m.vars[k] },
		Home:   m.home,
		OnGCE: func(context.Context) bool {
			m.asked = true
			return m.onGCE
		},
		MetadataProject: func(context.Context) string { return "meta-project" },
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	const sa = `{"type": "service_account", "project_id": "sa-project", "client_email": "runner@sa-project.iam.gserviceaccount.com"}`
	const user = `{"type": "authorized_user", "client_id": "x", "refresh_token": "y", "quota_project_id": "quota-project"}`
	type want struct {
		ok            bool
		project       string
		projectSource string
		credSuffix    string // CredentialSource ends with it
		problems      []string
		askedMetadata bool
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, m *fakeMachine)
		cfg   Config
		want  want
	}{{
		name:  "nothing at all",
		setup: func(t *testing.T, m *fakeMachine) {},
		want:  want{problems: []string{"no application default credentials", "no project"}, askedMetadata: true},
	}, {
		name: "service account key from the environment",
		setup: func(t *testing.T, m *fakeMachine) {
			path := filepath.Join(t.TempDir(), "key.json")
			writeFile(t, path, sa)
			m.vars["GOOGLE_APPLICATION_CREDENTIALS"] = path
		},
		want: want{ok: true, project: "sa-project", projectSource: "key.json", credSuffix: "key.json"},
	}, {
		name: "key file named but missing",
		setup: func(t *testing.T, m *fakeMachine) {
			m.vars["GOOGLE_APPLICATION_CREDENTIALS"] = "/nonexistent/key.json"
			m.vars["GOOGLE_CLOUD_PROJECT"] = "env-project"
		},
		want: want{project: "env-project", projectSource: "GOOGLE_CLOUD_PROJECT", problems: []string{"GOOGLE_APPLICATION_CREDENTIALS=/nonexistent/key.json"}},
	}, {
		name: "gcloud login with its project in gcloud's config",
		setup: func(t *testing.T, m *fakeMachine) {
			dir := filepath.Join(m.home, ".config", "gcloud")
			writeFile(t, filepath.Join(dir, "application_default_credentials.json"), `{"type": "authorized_user"}`)
			writeFile(t, filepath.Join(dir, "configurations", "config_default"), "[core]\naccount = me@example.com\nproject = gcloud-project\n")
		},
		want: want{ok: true, project: "gcloud-project", projectSource: "gcloud config (core/project)", credSuffix: "application_default_credentials.json"},
	}, {
		name: "gcloud login, quota project, config wins",
		setup: func(t *testing.T, m *fakeMachine) {
			writeFile(t, filepath.Join(m.home, ".config", "gcloud", "application_default_credentials.json"), user)
		},
		cfg:  Config{Project: "configured"},
		want: want{ok: true, project: "configured", projectSource: "config (gcp.project)", credSuffix: "application_default_credentials.json"},
	}, {
		name: "gcloud login without a project",
		setup: func(t *testing.T, m *fakeMachine) {
			writeFile(t, filepath.Join(m.home, ".config", "gcloud", "application_default_credentials.json"), `{"type": "authorized_user"}`)
		},
		want: want{problems: []string{"no project"}, credSuffix: "application_default_credentials.json"},
	}, {
		name: "a broken credentials file",
		setup: func(t *testing.T, m *fakeMachine) {
			writeFile(t, filepath.Join(m.home, ".config", "gcloud", "application_default_credentials.json"), `{"client_id": "x"}`)
			m.vars["CLOUDSDK_CORE_PROJECT"] = "p"
		},
		want: want{project: "p", projectSource: "CLOUDSDK_CORE_PROJECT", problems: []string{"no \"type\""}},
	}, {
		name:  "a Compute Engine VM",
		setup: func(t *testing.T, m *fakeMachine) { m.onGCE = true },
		want:  want{ok: true, project: "meta-project", projectSource: "metadata server", credSuffix: "metadata server", askedMetadata: true},
	}, {
		name:  "an emulator needs no credentials",
		setup: func(t *testing.T, m *fakeMachine) {},
		cfg:   Config{Endpoint: "http://127.0.0.1:1", Project: "p"},
		want:  want{ok: true, project: "p", projectSource: "config (gcp.project)", credSuffix: "http://127.0.0.1:1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeMachine{vars: map[string]string{}, home: t.TempDir()}
			tc.setup(t, m)
			r := check(context.Background(), m.env(), tc.cfg)
			if r.OK() != tc.want.ok {
				t.Errorf("OK() = %v, want %v; problems %q", r.OK(), tc.want.ok, r.Problems)
			}
			if r.Project != tc.want.project || !strings.HasSuffix(r.ProjectSource, tc.want.projectSource) {
				t.Errorf("project %q from %q, want %q from ...%q", r.Project, r.ProjectSource, tc.want.project, tc.want.projectSource)
			}
			if !strings.HasSuffix(r.CredentialSource, tc.want.credSuffix) || (tc.want.credSuffix == "") != (r.CredentialSource == "") {
				t.Errorf("credentials from %q, want ...%q", r.CredentialSource, tc.want.credSuffix)
			}
			if len(r.Problems) != len(tc.want.problems) {
				t.Fatalf("problems %q, want ones with %q", r.Problems, tc.want.problems)
			}
			for i, p := range tc.want.problems {
				if !strings.Contains(r.Problems[i], p) {
					t.Errorf("problem %d = %q, want it to contain %q", i, r.Problems[i], p)
				}
			}
			if m.asked != tc.want.askedMetadata {
				t.Errorf("asked the metadata server: %v, want %v", m.asked, tc.want.askedMetadata)
			}
			if diff := cmp.Diff(DefaultRegions(), r.Regions); tc.cfg.Regions == nil && diff != "" {
				t.Errorf("regions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewNeedsAProject(t *testing.T) {
	m := &fakeMachine{vars: map[string]string{}, home: t.TempDir()}
	_, err := build(context.Background(), Config{Home: t.TempDir(), Endpoint: "http://127.0.0.1:1"}, m.env())
	if err == nil || !strings.Contains(err.Error(), "no project") {
		t.Errorf("New without a project = %v, want an error saying so", err)
	}
	m.vars["GOOGLE_CLOUD_PROJECT"] = "from-env"
	p, err := build(context.Background(), Config{Home: t.TempDir(), Endpoint: "http://127.0.0.1:1"}, m.env())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Project() != "from-env" {
		t.Errorf("project %q, want from-env", p.Project())
	}
	_, err = New(context.Background(), Config{Home: t.TempDir(), Project: "p", Endpoint: "http://127.0.0.1:1", TerminationAction: "KEEP"})
	if err == nil || !strings.Contains(err.Error(), `"KEEP"`) {
		t.Errorf("New with a bad termination action = %v, want an error naming it", err)
	}
}
