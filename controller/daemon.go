package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sortie/controller/store"
)

// Paths under SORTIE_HOME.
func lockPath(home string) string  { return filepath.Join(home, "controller.lock") }
func pidPath(home string) string   { return filepath.Join(home, "controller.pid") }
func DaemonLog(home string) string { return filepath.Join(home, "controller.log") }
func StatePath(home string) string { return filepath.Join(home, "state.db") }

// lock takes the controller lock of home without waiting. The lock is an
// flock, so it goes away with the process however it dies.
func lock(home string) (*os.File, error) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(lockPath(home), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, errRunning
	}
	return f, nil
}

var errRunning = errors.New("a controller is already running for this SORTIE_HOME")

// Daemon is the state a running controller process holds.
type Daemon struct {
	Home       string
	Log        *slog.Logger
	Configure  func(*ProviderSet) // adds cloud providers
	Controller *Controller
}

// Run runs the controller of home in this process until ctx ends or the
// process gets SIGTERM/SIGINT. SIGUSR1 makes it reconcile at once.
func (d *Daemon) Run(ctx context.Context) error {
	lk, err := lock(d.Home)
	// `controller status` and the CLI probe by taking the lock for an
	// instant: a daemon starting in that instant waits it out.
	for deadline := time.Now().Add(2 * time.Second); errors.Is(err, errRunning) && daemonPID(d.Home) <= 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		lk, err = lock(d.Home)
	}
	if err != nil {
		if errors.Is(err, errRunning) {
			return fmt.Errorf("%w (pid %d)", err, daemonPID(d.Home))
		}
		return err
	}
	defer lk.Close()
	if err := writeFileAtomic(pidPath(d.Home), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(pidPath(d.Home))
	cfg, err := LoadConfig(d.Home, os.Getenv)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, StatePath(d.Home), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	provs := NewProviderSet(cfg)
	if d.Configure != nil {
		d.Configure(provs)
	}
	c := New(st, cfg, provs, d.Log)
	d.Controller = c
	stopProfiles, err := Profiling(os.Getenv, c.Log)
	defer stopProfiles()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	wake := make(chan os.Signal, 1)
	signal.Notify(wake, syscall.SIGUSR1)
	defer signal.Stop(wake)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				c.Wake()
			}
		}
	}()
	c.Log.Info("controller started", "home", d.Home, "pid", os.Getpid(), "poll_interval", cfg.Controller.PollInterval.D())
	err = c.Run(ctx)
	c.Log.Info("controller stopped")
	return err
}

// daemonPID returns the pid of home's running controller, or 0.
func daemonPID(home string) int {
	b, err := os.ReadFile(pidPath(home))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// DaemonRunning reports the pid of home's controller, or 0 when none runs.
// The lock, not the pid file, is the truth: a pid file can outlive a kill -9.
func DaemonRunning(home string) int {
	lk, err := lock(home)
	if err == nil {
		lk.Close()
		return 0
	}
	if pid := daemonPID(home); pid > 0 {
		return pid
	}
	return -1 // locked, pid file not written yet
}

// EnsureDaemon starts home's controller in the background unless one runs,
// and nudges it to look at the store now.
func EnsureDaemon(ctx context.Context, home string) error {
	if pid := DaemonRunning(home); pid != 0 {
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGUSR1)
		}
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(DaemonLog(home), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(exe, "controller", "run")
	cmd.Env = append(os.Environ(), "SORTIE_HOME="+home)
	cmd.Dir = home
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start controller: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // reaped so it never lingers as a zombie of a long-lived caller
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if daemonPID(home) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("controller did not start within 10s; see %s", DaemonLog(home))
}

// StopDaemon asks home's controller to stop and waits for it.
func StopDaemon(ctx context.Context, home string) (int, error) {
	pid := DaemonRunning(home)
	if pid <= 0 {
		return 0, nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return pid, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if DaemonRunning(home) == 0 {
			return pid, nil
		}
		select {
		case <-ctx.Done():
			return pid, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return pid, fmt.Errorf("controller (pid %d) did not stop within 30s", pid)
}
