package node

import (
	"path/filepath"

	"sortie/provision/node/agent"
)

// AgentPID returns the pid the agent recorded in a node directory on this
// machine; 0 before it started. The agent leads its own session and process
// group, so this is also its group id.
func AgentPID(dir string) int {
	return agent.RecordedPID(dir)
}

// Groups returns the process groups the agent recorded in a node directory
// on this machine: its own, then each phase's that began. A provider
// running nodes locally uses them to signal a node's processes.
func Groups(dir string) []int {
	var out []int
	for _, name := range []string{agent.FilePID, "pgid." + PhaseSetup, "pgid." + PhaseRun} {
		if n := agent.ReadPID(filepath.Join(dir, name)); n > 0 {
			out = append(out, n)
		}
	}
	return out
}
