// Package storm is sortie's chaos run: many jobs of known behaviour on the
// sim or local provider while the controller program is killed with
// SIGKILL again and again (sometimes two started at once, once frozen with
// SIGSTOP), then checks, from the store, the cloud's records and the tasks'
// own log, that nothing was lost, run twice, leaked or recorded wrong.
// `make chaos` runs it at full size (smoke_tests/chaos); a short run is
// part of the smoke tests.
package storm

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sortie/controller/daemon"
	sortiehome "sortie/controller/home"
)

// ctl starts and kills the controller program of one home.
type ctl struct {
	bin  string // the controller program
	home string
	env  []string
	log  io.Writer
	rnd  *rand.Rand
	cur  *proc
}

type proc struct {
	pid  int
	done chan error
}

func newCtl(cliBin, home string, extraEnv []string, progress io.Writer, seed uint64) *ctl {
	// Local tasks run unsandboxed: they record the codes they choose in
	// files of the home, which a sandbox hides.
	env := []string{"SORTIE_HOME=" + home, "SORTIE_LOCAL_SANDBOX=off"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SORTIE_") {
			continue
		}
		env = append(env, kv)
	}
	return &ctl{bin: filepath.Join(filepath.Dir(cliBin), daemon.Binary), home: home, env: append(env, extraEnv...),
		log: progress, rnd: rand.New(rand.NewPCG(seed, 0x5eed))}
}

// spawn starts one controller process, its output appended to the home's
// controller.log (or dropped when that cannot be opened: a full disk).
func (c *ctl) spawn() (*proc, error) {
	cmd := exec.Command(c.bin, "run")
	cmd.Env, cmd.Dir = c.env, c.home
	if f, err := os.OpenFile(sortiehome.ControllerLog(c.home), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start controller: %w", err)
	}
	p := &proc{pid: cmd.Process.Pid, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// start starts n controllers at once (1 or 2) and waits until one holds
// the home's lock; any other must exit, refused.
func (c *ctl) start(ctx context.Context, n int) error {
	var ps []*proc
	for i := 0; i < n; i++ {
		p, err := c.spawn()
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		holder := daemon.Running(c.home)
		var winner *proc
		alive := 0
		for _, p := range ps {
			if p.pid == holder {
				winner = p
			}
			if !p.exited() {
				alive++
			}
		}
		if winner != nil && alive == 1 {
			c.cur = winner
			return nil
		}
		if alive == 0 {
			return fmt.Errorf("every controller started (%d) exited; see %s", n, sortiehome.ControllerLog(c.home))
		}
		if time.Now().After(deadline) {
			for _, p := range ps {
				p.kill()
			}
			return fmt.Errorf("%d controllers started at once: %d still run after 20s, the lock held by pid %d", n, alive, holder)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (p *proc) exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// kill sends SIGKILL to the process group of a controller and reaps it.
// The tasks of local nodes run in sessions of their own and live on.
func (p *proc) kill() {
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	err := <-p.done
	p.done <- err
}

// kill kills the running controller.
func (c *ctl) kill() {
	if c.cur != nil {
		c.cur.kill()
		c.cur = nil
	}
}

// stop stops the running controller gracefully.
func (c *ctl) stop(timeout time.Duration) error {
	if c.cur == nil {
		return nil
	}
	p := c.cur
	c.cur = nil
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("controller (pid %d) did not stop within %s; killed", p.pid, timeout)
	}
}

// gap is a random wait in [lo, hi].
func (c *ctl) gap(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(c.rnd.Int64N(int64(hi-lo)))
}

// pauseWatcher follows controller.log for the "pause point" lines that
// SORTIE_PAUSE_AT makes the controller write.
type pauseWatcher struct {
	path   string
	offset int64
}

// next waits until a pause point line written after the last one seen
// appears, and returns it.
func (w *pauseWatcher) next(ctx context.Context, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		f, err := os.Open(w.path)
		if err == nil {
			if _, err := f.Seek(w.offset, io.SeekStart); err == nil {
				r := bufio.NewReader(f)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						break // a partial line is read again next time
					}
					w.offset += int64(len(line))
					if strings.Contains(line, "pause point") {
						f.Close()
						return strings.TrimSpace(line), nil
					}
				}
			}
			f.Close()
		}
		if time.Now().After(deadline) {
			return "", errors.New("no pause point reached")
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// skip makes the watcher ignore what the log holds so far.
func (w *pauseWatcher) skip() {
	if st, err := os.Stat(w.path); err == nil {
		w.offset = st.Size()
	}
}
