package node

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// WrapperPID returns the pid the wrapper recorded in a node directory on this
// machine; 0 before it started. The wrapper leads its own session and process
// group, so this is also its group id.
func WrapperPID(dir string) int {
	return readPID(filepath.Join(dir, "pid"))
}

// Groups returns the process groups the wrapper recorded in a node directory
// on this machine: its own, then each phase's that began. A provider running
// nodes locally uses them to signal a node's processes.
func Groups(dir string) []int {
	var out []int
	for _, name := range []string{"pid", "pgid." + PhaseSetup, "pgid." + PhaseRun} {
		if n := readPID(filepath.Join(dir, name)); n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func readPID(path string) int {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A full disk: the number is in the name of an empty file.
		names, _ := filepath.Glob(path + ".is.*")
		if len(names) == 0 {
			return 0
		}
		sort.Strings(names)
		b, err = []byte(strings.TrimPrefix(names[0], path+".is.")), nil
	}
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 1 {
		return 0
	}
	return n
}
