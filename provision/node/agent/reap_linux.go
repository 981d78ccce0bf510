package agent

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// Subreaper makes this process the reaper of its orphaned descendants (on
// true) or stops it: a process the task left behind, even one that left its
// process group and session (setsid, a daemon's double fork), stays below
// the agent instead of going to init.
func Subreaper(on bool) error {
	arg := uintptr(0)
	if on {
		arg = 1
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, arg, 0); errno != 0 {
		return errno
	}
	return nil
}

// kids is the process-wide reaper of a subreaper agent: every child the
// agent starts goes through startChild, which files it here, and one loop
// reaps whatever child ends (on SIGCHLD, and every second in case a signal
// was merged), handing each filed child's status to its waiter and dropping
// the rest: the task's orphans, which came to the agent as their
// subreaper. A child is filed under the same lock the loop reaps under, so
// none ends unseen between its start and its filing.
var kids = struct {
	mu    sync.Mutex
	waits map[int]chan int
	once  sync.Once
}{waits: map[int]chan int{}}

// startChild starts cmd and returns its pid and the channel its exit code (as a shell
// reports it: 128+N for signal N) arrives on once it ended and was reaped.
// cmd must not be waited for.
func startChild(cmd *exec.Cmd) (int, <-chan int, error) {
	kids.once.Do(func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGCHLD)
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-sig:
				case <-tick.C:
				}
				reapAll()
			}
		}()
	})
	kids.mu.Lock()
	defer kids.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	pid := cmd.Process.Pid
	ch := make(chan int, 1)
	kids.waits[pid] = ch
	// Its status comes from the reaper, never from Wait (Release makes
	// cmd.Process.Pid -1).
	cmd.Process.Release()
	return pid, ch, nil
}

// signalChild sends sig to a child filed by startChild, unless it has been
// reaped already (its pid may then be another process's).
func signalChild(pid int, sig syscall.Signal) {
	kids.mu.Lock()
	defer kids.mu.Unlock()
	if _, ok := kids.waits[pid]; ok {
		syscall.Kill(pid, sig)
	}
}

// filed says whether pid is a child some waiter waits for.
func filed(pid int) bool {
	kids.mu.Lock()
	defer kids.mu.Unlock()
	_, ok := kids.waits[pid]
	return ok
}

// reapAll reaps every child that has ended, without waiting.
func reapAll() {
	kids.mu.Lock()
	defer kids.mu.Unlock()
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || got <= 0 {
			return
		}
		if ch, ok := kids.waits[got]; ok {
			delete(kids.waits, got)
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			ch <- code
		}
	}
}

// Children lists this process's children: those of each of its threads,
// as the kernel may give an orphan to any of them.
func Children() []int {
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

// leftovers lists the children no waiter waits for: what the task left
// behind.
func leftovers() []int {
	var out []int
	for _, pid := range Children() {
		if !filed(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// endLeftovers ends what the task left running once its last phase has
// ended, as SkyPilot ends a job's process tree: SIGTERM to each remaining
// child and its process group, up to
// grace to exit, then SIGKILL until none is left (a killed process's own
// children come to the agent in turn). It reports whether none is left
// within grace plus a few seconds.
func endLeftovers(grace time.Duration) bool {
	own := syscall.Getpgrp()
	signal := func(sig syscall.Signal) {
		for _, pid := range leftovers() {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != own {
				syscall.Kill(-pgid, sig)
			}
			syscall.Kill(pid, sig)
		}
	}
	if waitNoLeftovers(0) {
		return true
	}
	signal(syscall.SIGTERM)
	if waitNoLeftovers(grace) {
		return true
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		signal(syscall.SIGKILL)
		if waitNoLeftovers(50 * time.Millisecond) {
			return true
		}
	}
	return false
}

// waitNoLeftovers reaps until no leftover is there, for up to d.
func waitNoLeftovers(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		reapAll()
		if len(leftovers()) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
