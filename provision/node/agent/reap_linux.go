package agent

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// becomeSubreaper makes this process the reaper of its orphaned
// descendants: a process the task left behind, even one that left its
// process group and session (setsid, a daemon's double fork), stays below
// the agent instead of going to init.
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// waitReaping waits for the process pid, reaping every other child that
// ends meanwhile (the task's orphans, which come to the agent as their
// subreaper), and returns how pid ended as a shell reports it.
func waitReaping(pid int) int {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return 1 // no child left: pid was reaped elsewhere
		}
		if got != pid {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// children lists this process's children: those of each of its threads,
// as the kernel may give an orphan to any of them.
func children() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// reapAll reaps every child that has ended, without waiting.
func reapAll() {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || got <= 0 {
			return
		}
	}
}

// endLeftovers ends what the task left running once its last phase has
// ended, as SkyPilot ends a job's process tree: SIGTERM to each remaining
// child and its process group, up to grace to exit, then SIGKILL until none
// is left (a killed process's own children come to the agent in turn). It
// reports whether none is left within grace plus a few seconds.
func endLeftovers(grace time.Duration) bool {
	own := syscall.Getpgrp()
	signal := func(sig syscall.Signal) {
		for _, pid := range children() {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != own {
				syscall.Kill(-pgid, sig)
			}
			syscall.Kill(pid, sig)
		}
	}
	reapAll()
	if len(children()) == 0 {
		return true
	}
	signal(syscall.SIGTERM)
	if waitNoChildren(grace) {
		return true
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		signal(syscall.SIGKILL)
		if waitNoChildren(50 * time.Millisecond) {
			return true
		}
	}
	return false
}

// waitNoChildren reaps until no child is left, for up to d.
func waitNoChildren(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		reapAll()
		if len(children()) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
