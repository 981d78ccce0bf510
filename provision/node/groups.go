package node

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Groups returns the process groups the wrapper recorded in a node directory
// on this machine: the wrapper's own (its pid) and each phase's that began.
// A provider that runs nodes locally uses it to signal a node's processes.
func Groups(dir string) []int {
	var out []int
	for _, name := range []string{"pid", "pgid." + PhaseSetup, "pgid." + PhaseRun} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 1 {
			out = append(out, n)
		}
	}
	return out
}
