// Package agenttest builds the node agent (cmd/sortie-agent) for tests that
// start tasks on real nodes, and sets SORTIE_AGENT to it, where
// node.AgentProgram looks first.
package agenttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
)

// Build builds the agent once per test process into a temporary directory
// and returns its path.
func Build() (string, error) {
	once.Do(func() {
		dir, e := os.MkdirTemp("", "sortie-agent-test")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "sortie-agent")
		cmd := exec.Command(goCommand(), "build", "-ldflags=-s", "-o", path, "sortie/cmd/sortie-agent")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, e := cmd.CombinedOutput(); e != nil {
			err = fmt.Errorf("build the node agent: %v\n%s", e, out)
		}
	})
	return path, err
}

// Main builds the agent, sets SORTIE_AGENT to it for the tests (and the
// programs they start), gives the test process an empty HOME of its own
// (a task's bash sources ~/.bashrc: the tests must neither run nor change
// the real one), runs the tests, and removes what it made.
func Main(m *testing.M) int {
	p, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(filepath.Dir(p))
	os.Setenv("SORTIE_AGENT", p)
	home, err := os.MkdirTemp("", "sortie-test-home")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(home)
	// The go command keeps its caches under HOME: keep the real ones.
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if os.Getenv(k) == "" {
			if out, err := exec.Command(goCommand(), "env", k).Output(); err == nil {
				os.Setenv(k, strings.TrimSpace(string(out)))
			}
		}
	}
	os.Setenv("HOME", home)
	return m.Run()
}

// goCommand is the go command on PATH, which go test itself is run by.
func goCommand() string { return "go" }
