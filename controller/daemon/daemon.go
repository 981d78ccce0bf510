// Package daemon runs and controls the controller process of one
// SORTIE_HOME: the lock that makes it one per home, its pid file, starting
// it in the background from the CLI, stopping it, and the signals it
// answers. What the process does is the caller's (controller.Serve).
//
// It must not import sortie/controller, sortie/provision/..., the AWS SDK or
// net/http: the CLI links it to start and find the controller process.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"sortie/controller/home"
)

// Binary is the controller program's name. The CLI starts it from the
// directory the CLI itself is in, else from PATH; SORTIE_CONTROLLER_BIN
// names it outright.
const Binary = "sortie-controller"

// lock takes the controller lock of h without waiting. The lock is an
// flock, so it goes away with the process however it dies.
func lock(h string) (*os.File, error) {
	if err := home.Make(h); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(home.Lock(h), os.O_CREATE|os.O_RDWR, home.FileMode)
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

// Run holds h's controller lock and pid file and runs serve until ctx ends
// or the process gets SIGTERM/SIGINT; each SIGUSR1 calls wake (a job was
// submitted or cancelled: look at the store now).
func Run(ctx context.Context, h string, serve func(ctx context.Context) error, wake func()) error {
	// SIGUSR1 is caught before the lock says where to send it: its default
	// action would end the process.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	defer signal.Stop(sig)
	lk, err := lock(h)
	// Where the kernel's lock table cannot be read, `controller status`
	// and the CLI probe the lock for an instant: a controller starting in
	// that instant waits it out. A controller holding it is named at once.
	for deadline := time.Now().Add(2 * time.Second); errors.Is(err, errRunning) && holder(h) <= 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		lk, err = lock(h)
	}
	if err != nil {
		if errors.Is(err, errRunning) {
			if p := holder(h); p > 0 {
				return fmt.Errorf("%w (pid %d)", err, p)
			}
			return err
		}
		return fmt.Errorf("take the controller lock: %w", err)
	}
	defer lk.Close()
	if err := home.WriteFileAtomic(home.PID(h), []byte(strconv.Itoa(os.Getpid())+"\n"), home.FileMode); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	// Removed only while this process still holds the lock: a pid file
	// written by a later controller is that one's.
	defer func() {
		if pidFile(h) == os.Getpid() {
			os.Remove(home.PID(h))
		}
	}()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				wake()
			}
		}
	}()
	return serve(ctx)
}

// Running reports the pid of h's controller, 0 when none runs, or -1 when
// one holds the lock but which process it is cannot be told. The lock,
// not the pid file, is the truth: a pid file can outlive a kill -9, be
// deleted, or name a process that reused the pid.
func Running(h string) int { return holder(h) }

// BinaryPath finds the controller program: $SORTIE_CONTROLLER_BIN, else
// beside the running executable, else on PATH.
func BinaryPath(getenv func(string) string) (string, error) {
	if p := getenv("SORTIE_CONTROLLER_BIN"); p != "" {
		// Absolute: the controller is started in SORTIE_HOME, where a
		// path relative to the caller's directory means something else.
		return filepath.Abs(p)
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), Binary)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath(Binary)
	if err != nil {
		return "", fmt.Errorf("%s is neither beside this program nor on PATH: install it with sortie (make build puts both in bin/), or set SORTIE_CONTROLLER_BIN", Binary)
	}
	return p, nil
}

// Ensure starts h's controller in the background unless one runs, and
// nudges a running one to look at the store now.
func Ensure(ctx context.Context, h string) error {
	if p := Running(h); p != 0 {
		if p > 0 {
			_ = syscall.Kill(p, syscall.SIGUSR1)
		}
		return nil
	}
	bin, err := BinaryPath(os.Getenv)
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(home.ControllerLog(h), os.O_CREATE|os.O_WRONLY|os.O_APPEND, home.FileMode)
	if err != nil {
		return fmt.Errorf("open controller log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run")
	cmd.Env = append(os.Environ(), "SORTIE_HOME="+h)
	cmd.Dir = h
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start controller: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // reaped so it never lingers as a zombie of a long-lived caller
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if Running(h) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("controller did not start within 10s; see %s", home.ControllerLog(h))
}

// Stop asks h's controller to stop and waits for it; it returns the pid it
// stopped, or 0 when none ran.
func Stop(ctx context.Context, h string) (int, error) {
	p := Running(h)
	if p == 0 {
		return 0, nil
	}
	if p < 0 {
		return 0, fmt.Errorf("a controller holds the lock %s, but which process it is cannot be told (no /proc/locks, no pid file naming a holder of the lock); stop it by hand", home.Lock(h))
	}
	if err := syscall.Kill(p, syscall.SIGTERM); err != nil {
		return p, fmt.Errorf("signal controller (pid %d): %w", p, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if Running(h) == 0 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p, fmt.Errorf("controller (pid %d) did not stop within 30s", p)
}
