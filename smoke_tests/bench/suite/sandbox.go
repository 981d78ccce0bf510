package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sortie/provision/node/agent"
)

// SandboxOptions is a run of Starts phase starts of a trivial task by the
// node agent, each once in the local sandbox (bubblewrap) and once on the
// machine itself, alternately, so that both see the same machine.
type SandboxOptions struct {
	Home   string
	Starts int
}

// SandboxResult is how long each start took, from the agent's claim of
// the node to the exit code written, with and without the sandbox.
type SandboxResult struct {
	Sandboxed, Plain []time.Duration
}

// RunSandbox measures SandboxOptions.
func RunSandbox(ctx context.Context, o SandboxOptions) (SandboxResult, error) {
	var r SandboxResult
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return r, fmt.Errorf("bubblewrap (bwrap) is missing: make deps installs it: %w", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return r, err
	}
	sb, err := json.Marshal(agent.Sandbox{Program: bwrap, Hide: []string{o.Home}})
	if err != nil {
		return r, err
	}
	for i := range o.Starts {
		for _, sandboxed := range []bool{true, false} {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			dir := filepath.Join(o.Home, "nodes", fmt.Sprintf("%d-%v", i, sandboxed))
			home := filepath.Join(o.Home, "homes", fmt.Sprintf("%d-%v", i, sandboxed))
			for _, d := range []string{filepath.Join(dir, agent.DefaultWorkdir), home} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					return r, err
				}
			}
			files := map[string][]byte{"env": nil, "run.sh": []byte("exit 0\n")}
			if sandboxed {
				files[agent.FileSandbox] = sb
			}
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					return r, err
				}
			}
			a := &agent.Agent{Dir: dir, Bash: bash, Env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}}
			t0 := time.Now()
			if err := a.Run(ctx); err != nil {
				return r, err
			}
			took := time.Since(t0)
			b, err := os.ReadFile(filepath.Join(dir, agent.RecordDir, agent.FileExitCode))
			if err != nil || !strings.HasPrefix(string(b), "run 0 -") {
				log, _ := os.ReadFile(filepath.Join(dir, agent.FileLog))
				return r, fmt.Errorf("start %d (sandboxed %v): exit_code %q (%v); log: %s", i, sandboxed, b, err, log)
			}
			if sandboxed {
				r.Sandboxed = append(r.Sandboxed, took)
			} else {
				r.Plain = append(r.Plain, took)
			}
		}
	}
	return r, nil
}
