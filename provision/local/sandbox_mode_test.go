package local

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sortie/provision"
	"sortie/schema"
)

// Where bubblewrap cannot be had, a shared server refuses local jobs at
// placement, saying why and both fixes, unless the admin turned the sandbox
// off; a single user's home in auto runs them on this machine; on runs
// them only sandboxed.
func TestWithoutBubblewrapAServerRefusesLocalJobs(t *testing.T) {
	none := func() SandboxStatus { return SandboxStatus{Why: "bubblewrap (bwrap) is not installed"} }
	works := func() SandboxStatus { return SandboxStatus{Program: "/usr/bin/bwrap"} }
	for _, tc := range []struct {
		name    string
		mode    string
		server  bool
		probe   func() SandboxStatus
		refused []string // parts of the refusal; nil when placed
		want    string   // the mode it runs in when placed
	}{
		{"server, no bwrap", "", true, none, []string{"a shared server runs local tasks only in a sandbox", "not installed", "install bubblewrap", "local.sandbox: off"}, ""},
		{"server, no bwrap, admin turned it off", SandboxOff, true, none, nil, SandboxOff},
		{"server, bwrap", "", true, works, nil, SandboxOn},
		{"home, auto, no bwrap", SandboxAuto, false, none, nil, SandboxOff},
		{"home, auto, bwrap", SandboxAuto, false, works, nil, SandboxOn},
		{"home, on, no bwrap", SandboxOn, false, none, []string{"local.sandbox is on", "install bubblewrap"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Config{Home: t.TempDir(), Sandbox: tc.mode, Server: tc.server, Probe: tc.probe})
			_, err := p.Placements(context.Background(), schema.Resources{})
			if tc.refused == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if mode, err := p.SandboxMode(); mode != tc.want || err != nil {
					t.Errorf("runs %s (%v), want %s", mode, err, tc.want)
				}
				return
			}
			var pe *provision.Error
			if !errors.As(err, &pe) || pe.Class != provision.ClassPrechecks {
				t.Fatalf("placement: %v; want a prechecks error", err)
			}
			for _, part := range tc.refused {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("refusal %q lacks %q", err, part)
				}
			}
		})
	}
}

// On a shared server a sandboxed task sees neither the sortie home nor the
// home of the user the server runs as (its cloud credentials, its SSH
// keys); a single user's own home hides only the sortie home.
func TestAServersSandboxHidesItsUsersHome(t *testing.T) {
	userHome := t.TempDir()
	t.Setenv("HOME", userHome)
	works := func() SandboxStatus { return SandboxStatus{Program: "/usr/bin/bwrap"} }
	sortieHome := t.TempDir()
	for _, tc := range []struct {
		server bool
		want   []string
	}{
		{true, []string{userHome, sortieHome}},
		{false, []string{sortieHome}},
	} {
		p := New(Config{Home: sortieHome, Sandbox: SandboxOn, Server: tc.server, Probe: works})
		sb, err := p.sandbox()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(sb.Hide, " ") != strings.Join(tc.want, " ") {
			t.Errorf("server %v hides %q, want %q", tc.server, sb.Hide, tc.want)
		}
	}
}
