package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sortie/provision/node/agent"
)

// Sandbox modes of local.sandbox in config.yaml.
const (
	// SandboxAuto runs tasks in the sandbox when bubblewrap is there and
	// works; on a shared server (Config.Server) it is SandboxOn.
	SandboxAuto = "auto"
	// SandboxOn runs tasks only in the sandbox: a node that cannot have
	// one refuses the task.
	SandboxOn = "on"
	// SandboxOff runs tasks on this machine as whoever runs sortie, with
	// its files in reach: for a single user's own home only.
	SandboxOff = "off"
)

// BwrapProgram is bubblewrap's program name.
const BwrapProgram = "bwrap"

// SandboxStatus is whether this machine can sandbox local tasks: the
// bubblewrap program found, or why there is none that works.
type SandboxStatus struct {
	Program string // bwrap's path; "" when it cannot be had
	Version string
	Why     string // why not, when Program is ""
}

// ProbeSandbox looks for bubblewrap and runs it once, as a task's sandbox
// would (user and PID namespaces, the host read-only): looked up once per
// process.
var ProbeSandbox = sync.OnceValue(func() SandboxStatus {
	p, err := exec.LookPath(BwrapProgram)
	if err != nil {
		return SandboxStatus{Why: "bubblewrap (bwrap) is not installed"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, p, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc", "--dev-bind", "/dev", "/dev", "--", "/bin/sh", "-c", "exit 0")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return SandboxStatus{Why: fmt.Sprintf("%s does not work here (%v: %s); it needs user namespaces (sysctl kernel.unprivileged_userns_clone=1, or a container allowed to make them)", p, err, strings.TrimSpace(out.String()))}
	}
	v, _ := exec.Command(p, "--version").Output()
	return SandboxStatus{Program: p, Version: strings.TrimSpace(string(v))}
})

// sandbox is how this provider's nodes run tasks: nil on the machine
// itself, an error when they must be sandboxed and cannot be.
func (p *Provider) sandbox() (*agent.Sandbox, error) {
	mode := p.sandboxMode
	if mode == SandboxOff {
		return nil, nil
	}
	st := p.probe()
	if st.Program == "" {
		if mode == SandboxAuto && !p.server {
			return nil, nil
		}
		who := "local.sandbox is on"
		if p.server {
			who = "a shared server runs local tasks only in a sandbox"
		}
		return nil, fmt.Errorf("%s, and %s: install bubblewrap (apt-get install bubblewrap), or set local.sandbox: off in config.yaml to run every user's local tasks with the server's own files in reach", who, st.Why)
	}
	return &agent.Sandbox{Program: st.Program, Hide: p.hidden()}, nil
}

// hidden are the folders a sandboxed task must not see: the sortie home
// and, on a shared server, the home of the user the server runs as (its
// cloud credentials and SSH keys are not its users'), the outer one first.
func (p *Provider) hidden() []string {
	hide := []string{p.home}
	if !p.server {
		return hide
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) && filepath.Clean(h) != "/" && filepath.Clean(h) != p.home {
		hide = append([]string{filepath.Clean(h)}, hide...)
	}
	return hide
}

// SandboxMode is the mode this provider runs in: SandboxOn or SandboxOff,
// as SandboxAuto turned out here, and why when a task cannot run.
func (p *Provider) SandboxMode() (string, error) {
	sb, err := p.sandbox()
	if err != nil {
		return SandboxOn, err
	}
	if sb == nil {
		return SandboxOff, nil
	}
	return SandboxOn, nil
}
