package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sortie/provision/node"
	"sortie/provision/node/agent"
)

// proc is one live process of a node: dir is the node directory in its
// environment, which may be a subdirectory of the provider's node directory
// (a restart on the same cluster runs in one of its own).
type proc struct {
	pid, pgid int
	dir       string
}

// nodeProcs returns the live processes, zombies aside, whose environment
// carries node.DirEnv set to one of dirs or a directory below one: the
// agent and everything the task started, including processes that left its
// process group.
func nodeProcs(dirs []string) ([]proc, error) {
	prefixes := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			d = r
		}
		prefixes = append(prefixes, filepath.Clean(d))
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("scan processes: %w", err)
	}
	self := os.Getpid()
	key := []byte(node.DirEnv + "=")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		// The environment first: most processes are not a node's, and
		// their state is then not worth reading.
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		var d string
		var ok bool
		if err == nil {
			d, ok = nodeDirOf(env, key)
		} else {
			// Gone, another user's, or a node agent, which keeps its
			// memory (the node's key) from the task by not being
			// dumpable: its command line still names its node.
			d, ok = agentDirOf(pid)
		}
		if !ok || !under(d, prefixes) {
			continue
		}
		state, pgid, ok := procStat(pid)
		if !ok || state == "Z" || state == "X" {
			continue
		}
		out = append(out, proc{pid: pid, pgid: pgid, dir: d})
	}
	return out, nil
}

// agentDirOf is the node directory of process pid when it is a node
// agent: the last argument of its command line.
func agentDirOf(pid int) (string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return "", false
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	if len(args) < 3 || filepath.Base(args[0]) != agent.Program || args[1] != "run" || !filepath.IsAbs(args[len(args)-1]) {
		return "", false
	}
	return args[len(args)-1], true
}

// nodeDirOf finds key's value in a process's environment (NUL-separated
// KEY=VALUE entries): the first entry of that name, as getenv reads it.
func nodeDirOf(env, key []byte) (string, bool) {
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, key); ok {
			return string(v), true
		}
	}
	return "", false
}

// taskDir is a directory a task may have run in: a node directory, or an
// attempt's directory below one (the node package's), with the marks its
// start and agent left there.
type taskDir struct {
	path                   string
	began, started, reaped bool
}

// taskDirs reads each of dirs and its subdirectories once for the marks
// of a start (started), an agent's claim (begun) and its end
// (agent.FileReaped).
func taskDirs(dirs []string) []taskDir {
	var out []taskDir
	look := func(d string) {
		has := func(name string) bool {
			_, err := os.Lstat(filepath.Join(d, name))
			return err == nil
		}
		out = append(out, taskDir{path: d, began: has(agent.FileBegun), started: has("started"), reaped: has(agent.FileReaped)})
	}
	for _, d := range dirs {
		look(d)
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			// The node's HOME is the task's, never an agent's.
			if e.IsDir() && e.Name() != homeName {
				look(filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// reaped reports whether every agent that began in ts has said that none
// of its task's processes is left (agent.FileReaped): its node then needs
// no scan of every process of the machine. A start under way (its started
// directory made, no agent's claim yet) counts as not reaped.
func reaped(ts []taskDir) bool {
	for _, t := range ts {
		if (t.began || t.started) && !t.reaped {
			return false
		}
	}
	return true
}

// scanProcs is nodeProcs; a test counts the scans.
var scanProcs = nodeProcs

// under reports whether dir is one of roots or below one.
func under(dir string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return dir == r || strings.HasPrefix(dir, r+"/") })
}

// procStat reads a process's state and process group from /proc/PID/stat.
func procStat(pid int) (state string, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	s := string(b)
	// The command name, in parentheses, may hold spaces and parentheses.
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 3 {
		return "", 0, false
	}
	pgid, err = strconv.Atoi(fields[2])
	return fields[0], pgid, err == nil
}

// groupAlive reports whether a live process, zombies aside, is in group pgid.
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if state, g, ok := procStat(pid); ok && g == pgid && state != "Z" && state != "X" {
			return true
		}
	}
	return false
}

// signal sends sig to each process and its group, never to this process's
// own group.
func signal(procs []proc, sig syscall.Signal) {
	own := syscall.Getpgrp()
	for _, p := range procs {
		if p.pgid > 1 && p.pgid != own {
			syscall.Kill(-p.pgid, sig)
		}
		syscall.Kill(p.pid, sig)
	}
}

// agentsFirst orders procs so that the nodes' agents are signalled
// first: an agent killed before its task cannot record an exit code for a
// task the cloud took away.
func agentsFirst(procs []proc) []proc {
	agents := map[int]bool{}
	for _, p := range procs {
		agents[node.AgentPID(p.dir)] = true
	}
	out := make([]proc, 0, len(procs))
	for _, p := range procs {
		if agents[p.pid] {
			out = append(out, p)
		}
	}
	for _, p := range procs {
		if !agents[p.pid] {
			out = append(out, p)
		}
	}
	return out
}

// killNodes ends every process of the node directories: SIGTERM and up to
// grace to exit, then SIGKILL (at once when grace is zero). It returns once
// none is left, or with an error naming the survivors.
func killNodes(ctx context.Context, dirs []string, grace time.Duration) error {
	if reaped(taskDirs(dirs)) {
		return nil
	}
	procs, err := scanProcs(dirs)
	if err != nil || len(procs) == 0 {
		return err
	}
	groups := groupsOf(procs)
	if grace > 0 {
		signal(agentsFirst(procs), syscall.SIGTERM)
		if procs, err = waitGone(ctx, dirs, grace, 0); err != nil {
			return err
		}
		if len(procs) == 0 {
			return waitGroupsGone(ctx, groups, 5*time.Second)
		}
	}
	signal(agentsFirst(procs), syscall.SIGKILL)
	procs, err = waitGone(ctx, dirs, 5*time.Second, syscall.SIGKILL)
	if err != nil {
		return err
	}
	if len(procs) > 0 {
		return fmt.Errorf("processes %v survived SIGKILL", procs)
	}
	return waitGroupsGone(ctx, groups, 5*time.Second)
}

// waitGroupsGone waits up to d for groups to hold no process that runs.
// A process on its way out has given back its memory, so its environment
// no longer names its node, some time before it becomes a zombie: the
// scan of waitGone no longer sees it, its group still does.
func waitGroupsGone(ctx context.Context, groups []int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for slices.ContainsFunc(groups, groupAlive) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process groups %v survived SIGKILL", groups)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// groupsOf lists the process groups of procs that signal sends to.
func groupsOf(procs []proc) []int {
	own := syscall.Getpgrp()
	var out []int
	for _, p := range procs {
		if p.pgid > 1 && p.pgid != own && !slices.Contains(out, p.pgid) {
			out = append(out, p.pgid)
		}
	}
	return out
}

// waitGone polls every 10ms, for up to d, until no process of dirs is left,
// and returns those that are. A non-zero resend is sent to each survivor on
// every poll: a process forked into a new group after the first signal
// escaped it.
func waitGone(ctx context.Context, dirs []string, d time.Duration, resend syscall.Signal) ([]proc, error) {
	deadline := time.Now().Add(d)
	for {
		procs, err := nodeProcs(dirs)
		if err != nil || len(procs) == 0 || time.Now().After(deadline) {
			return procs, err
		}
		if resend != 0 {
			signal(procs, resend)
		}
		select {
		case <-ctx.Done():
			return procs, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
