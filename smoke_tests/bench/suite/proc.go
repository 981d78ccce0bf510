// Package suite runs sortie's benchmarks: each starts the real binary's
// controller as a process of its own, with its own SORTIE_HOME, drives it,
// and measures it from outside (wall clock, /proc, the store). The bench
// command prints the figures; a short run of the same code is part of the
// smoke tests, which check its outcomes and never its timings.
package suite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Daemon is a controller process started for a benchmark.
type Daemon struct {
	Home string
	Pid  int
	cmd  *exec.Cmd
	done chan error
}

// Environ is the environment the benchmark's processes run with: this
// process's, without the SORTIE_* settings that would change what is
// measured (the profiling switches are kept), with SORTIE_HOME set to home
// and local tasks run unsandboxed: the benchmark's tasks wait for files it
// writes in the home, which a sandbox hides, and the sandbox's own cost is
// the sandbox group's figure.
func Environ(home string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "SORTIE_CPUPROFILE" || k == "SORTIE_MEMPROFILE" || k == "SORTIE_PPROF":
		case strings.HasPrefix(k, "SORTIE_"):
			continue
		}
		out = append(out, kv)
	}
	return append(out, "SORTIE_HOME="+home, "SORTIE_LOCAL_SANDBOX=off")
}

// runCLI runs the sortie CLI bin with args in dir and says how long it
// took and what it printed on stdout; an error carries its stderr.
func runCLI(ctx context.Context, bin string, env []string, dir string, args ...string) (time.Duration, string, error) {
	el, _, out, err := runCLICPU(ctx, bin, env, dir, args...)
	return el, out, err
}

// runCLICPU is runCLI that also says how much CPU (user and system) the
// CLI's process used.
func runCLICPU(ctx context.Context, bin string, env []string, dir string, args ...string) (wall, cpu time.Duration, stdout string, err error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err = cmd.Run()
	wall = time.Since(t0)
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return wall, cpu, "", fmt.Errorf("sortie %s: %w: %s", strings.Join(args, " "), err, errb.String())
	}
	return wall, cpu, out.String(), nil
}

// StartDaemon runs the controller program beside bin (`sortie-controller
// run`) for home, its output in home/controller.log, and returns once it
// has taken the home.
func StartDaemon(ctx context.Context, bin, home string) (*Daemon, error) {
	pidFile := filepath.Join(home, "controller.pid")
	return startController(ctx, bin, home, "controller", "controller.log", "start", 15*time.Second, 10*time.Millisecond,
		func(pid int) bool {
			b, err := os.ReadFile(pidFile)
			return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(pid)
		}, "run")
}

// startController runs `sortie-controller args` beside bin for home, its
// output appended to home/logName, and waits, checking every tick, until
// ready says the process (what, in errors) has done what verb names.
func startController(ctx context.Context, bin, home, what, logName, verb string, within, tick time.Duration, ready func(pid int) bool, args ...string) (*Daemon, error) {
	return startControllerEnv(ctx, bin, home, Environ(home), what, logName, verb, within, tick, ready, args...)
}

// startControllerEnv is startController with the process's environment.
func startControllerEnv(ctx context.Context, bin, home string, env []string, what, logName, verb string, within, tick time.Duration, ready func(pid int) bool, args ...string) (*Daemon, error) {
	logPath := filepath.Join(home, logName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(filepath.Join(filepath.Dir(bin), "sortie-controller"), args...)
	cmd.Env = env
	cmd.Dir = home
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	d := &Daemon{Home: home, Pid: cmd.Process.Pid, cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		if ready(d.Pid) {
			return d, nil
		}
		select {
		case err := <-d.done:
			return nil, fmt.Errorf("%s exited at start (%v); see %s", what, err, logPath)
		case <-ctx.Done():
			d.Kill()
			return nil, ctx.Err()
		case <-time.After(tick):
		}
	}
	d.Kill()
	return nil, fmt.Errorf("%s did not %s within %s; see %s", what, verb, within, logPath)
}

// Nudge makes the controller reconcile now, as the CLI does after a submit.
func (d *Daemon) Nudge() { _ = syscall.Kill(d.Pid, syscall.SIGUSR1) }

// Stop asks the controller to stop and waits for it, killing it after
// timeout.
func (d *Daemon) Stop(timeout time.Duration) error {
	if err := syscall.Kill(d.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	select {
	case err := <-d.done:
		d.done <- err
		return nil
	case <-time.After(timeout):
		d.Kill()
		return fmt.Errorf("controller (pid %d) did not stop within %s; killed", d.Pid, timeout)
	}
}

// Kill kills the controller's process group and reaps it.
func (d *Daemon) Kill() {
	_ = syscall.Kill(-d.Pid, syscall.SIGKILL)
	err := <-d.done
	d.done <- err
}

// Usage is what a process has used so far.
type Usage struct {
	PeakRSSKiB int64 // VmHWM
	RSSKiB     int64 // VmRSS
	CPU        time.Duration
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go supports.
const clockTick = 100

// ReadUsage reads pid's peak and current resident memory from
// /proc/PID/status and its user and system CPU time from /proc/PID/stat.
func ReadUsage(pid int) (Usage, error) {
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, fmt.Errorf("read usage: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmHWM":
			u.PeakRSSKiB = n
		case "VmRSS":
			u.RSSKiB = n
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, fmt.Errorf("read usage: %w", err)
	}
	// Fields after the command name, which may hold spaces: state is the
	// first, utime and stime the 12th and 13th.
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, fmt.Errorf("read usage: /proc/%d/stat has %d fields after the name", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("read usage: /proc/%d/stat utime %q stime %q", pid, f[11], f[12])
	}
	u.CPU = time.Duration(ut+st) * time.Second / clockTick
	return u, nil
}
