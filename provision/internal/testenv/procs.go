package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// nodeDirEnv is the variable the node agent sets, to its node directory,
// in the environment of every process of the task.
const nodeDirEnv = "SORTIE_NODE_DIR"

// KillNodeProcesses does to a node directory what losing the VM does to a
// task: every process of it dies at once, without a chance to write an exit
// code. It kills the process groups the agent recorded in dir (pid,
// pgid.setup, pgid.run) and any process whose environment names dir under
// SORTIE_NODE_DIR (one that left its group). It returns how many it signalled.
func KillNodeProcesses(dir string) int {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	n := 0
	self := syscall.Getpgrp()
	// The agent first, as a VM's end takes it with its task: killed
	// after, it would see its task die and record the signal's code.
	groups, _ := filepath.Glob(filepath.Join(dir, "pgid.*"))
	names := append([]string{filepath.Join(dir, "pid")}, groups...)
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		pg, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pg <= 1 || pg == self || !nodeGroup(pg, dir) {
			continue
		}
		if syscall.Kill(-pg, syscall.SIGKILL) == nil {
			n++
		}
	}
	for _, pid := range pids() {
		if inNode(pid, dir) && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// inNode says whether process pid's environment names dir, or a directory
// below it, under SORTIE_NODE_DIR.
func inNode(pid int, dir string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	want := []byte(nodeDirEnv + "=" + dir)
	return slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool {
		return bytes.Equal(kv, want) || bytes.HasPrefix(kv, append(want, '/'))
	})
}

// nodeGroup says whether process group pg still holds a process of the
// node in dir: its agent (sortie-agent with dir on its command line) or a
// task process (SORTIE_NODE_DIR naming dir). A pid file outlives its processes,
// and the kernel hands the number to others: tests running at the same time
// started some of them, and killing those made their agents die "without
// an exit code".
func nodeGroup(pg int, dir string) bool {
	agentDir := []byte(dir)
	for _, pid := range pids() {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		// After the name: state, ppid, pgrp.
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pg) {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
			args := bytes.Split(cmdline, []byte{0})
			if filepath.Base(string(args[0])) == "sortie-agent" {
				for _, arg := range args[1:] {
					if bytes.Equal(arg, agentDir) {
						return true
					}
				}
			}
		}
		if inNode(pid, dir) {
			return true
		}
	}
	return false
}

// KillNodeProcessesUnder runs KillNodeProcesses on every directory directly
// under root: a test's cleanup for all the nodes it started.
func KillNodeProcessesUnder(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() {
			KillNodeProcesses(filepath.Join(root, e.Name()))
		}
	}
}

// pids lists the live process ids.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	for _, p := range pids() {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses and may hold spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// killDescendants kills pid's descendants deepest first, each while its
// parent is alive to reap it: a container's init may not reap orphans,
// which would then stay zombies for good.
func killDescendants(pid int) {
	for _, c := range childrenOf(pid) {
		killDescendants(c)
		syscall.Kill(c, syscall.SIGKILL)
	}
	for i := 0; i < 100 && len(childrenOf(pid)) > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
}
