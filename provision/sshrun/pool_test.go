package sshrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/provision/internal/testenv"
)

// poolEnv is the tests' sshd behind a proxy that counts the connections
// made to it, each one a handshake, as seen from outside the client.
type poolEnv struct {
	sshd  *testenv.SSHD
	proxy *testenv.CountingProxy
	cfg   Config
	clock *fakeClock
	pool  *Pool
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newPoolEnv(t *testing.T) *poolEnv {
	t.Helper()
	sshd := testenv.StartSSHD(t)
	proxy := testenv.StartCountingProxy(t, sshd.Addr)
	keys := t.TempDir()
	signer, line, err := LoadOrCreateKey(keys)
	if err != nil {
		t.Fatal(err)
	}
	sshd.Authorize(t, line)
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	pool := &Pool{Now: clock.Now}
	t.Cleanup(func() { pool.Close() })
	return &poolEnv{sshd: sshd, proxy: proxy, clock: clock, pool: pool, cfg: Config{
		Addr:         proxy.Addr(),
		User:         sshd.User,
		Signer:       signer,
		HostKeyStore: NewKnownHosts(filepath.Join(keys, KnownHostsFile)),
		HostID:       "i-0100",
		Dir:          "/nodes/i-0100",
	}}
}

// poll is one status check as the controller makes it: a runner from the
// pool, one command, the runner closed.
func (e *poolEnv) poll(ctx context.Context, hostID string) (string, error) {
	cfg := e.cfg
	cfg.HostID = hostID
	r, err := e.pool.Runner(ctx, "cluster-"+hostID, cfg)
	if err != nil {
		return "", err
	}
	defer r.Close()
	out, err := r.Exec(ctx, "echo up", nil)
	return string(out), err
}

func TestPoolPollsOverOneConnection(t *testing.T) {
	e := newPoolEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Warm-up: the first poll dials.
	if out, err := e.poll(ctx, "i-0100"); err != nil || out != "up\n" {
		t.Fatalf("first poll = %q, %v", out, err)
	}
	// Many jobs poll the node at once, again and again.
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if out, err := e.poll(ctx, "i-0100"); err != nil || out != "up\n" {
					errs <- fmt.Errorf("poll = %q, %v", out, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.proxy.Accepted(); n != 1 {
		t.Errorf("%d handshakes for 201 polls of one node, want 1", n)
	}
	if n := e.pool.Open(); n != 1 {
		t.Errorf("%d connections open, want 1", n)
	}
}

func TestPoolRedialsAfterADropWithBackoff(t *testing.T) {
	e := newPoolEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.poll(ctx, "i-0100"); err != nil {
		t.Fatal(err)
	}
	// The connection drops, and the node cannot be reached for a while.
	e.proxy.Refuse(true)
	e.proxy.DropAll()
	if !e.proxy.WaitLive(0, 10*time.Second) {
		t.Fatal("the proxy kept the connection")
	}
	_, err := e.poll(ctx, "i-0100")
	if err == nil {
		t.Fatal("a poll of an unreachable node succeeded")
	}
	tries := e.proxy.Accepted()
	// Within the back-off, polls fail at once without dialling.
	for i := 0; i < 5; i++ {
		_, err := e.poll(ctx, "i-0100")
		if err == nil || !strings.Contains(err.Error(), "not dialled again") {
			t.Fatalf("poll within the back-off: %v, want a failure naming the back-off", err)
		}
	}
	e.proxy.Refuse(false)
	if _, err := e.poll(ctx, "i-0100"); err == nil {
		t.Fatal("a poll within the back-off dialled")
	}
	if n := e.proxy.Accepted(); n != tries {
		t.Errorf("%d connections accepted within the back-off, want none", n-tries)
	}
	// Past it, the next poll dials once and the node answers again.
	e.clock.Advance(e.pool.backoff(1))
	if out, err := e.poll(ctx, "i-0100"); err != nil || out != "up\n" {
		t.Fatalf("poll after the back-off = %q, %v", out, err)
	}
	for i := 0; i < 10; i++ {
		if _, err := e.poll(ctx, "i-0100"); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.proxy.Accepted(); n != tries+1 {
		t.Errorf("%d handshakes after the node came back, want 1", n-tries)
	}
}

func TestPoolBackoffDoublesToItsCap(t *testing.T) {
	p := &Pool{MinBackoff: time.Second, MaxBackoff: 16 * time.Second}
	var got []time.Duration
	for f := 1; f <= 7; f++ {
		got = append(got, p.backoff(f))
	}
	want := []time.Duration{1, 2, 4, 8, 16, 16, 16}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("back-offs = %v, want %v seconds", got, want)
		}
	}
}

func TestPoolRedialsAtOnceAfterADrop(t *testing.T) {
	e := newPoolEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.poll(ctx, "i-0100"); err != nil {
		t.Fatal(err)
	}
	// A blip: the node is still there. The first poll after it dials at
	// once (no back-off after a connection that worked).
	e.proxy.DropAll()
	if !e.proxy.WaitLive(0, 10*time.Second) {
		t.Fatal("the proxy kept the connection")
	}
	if out, err := e.poll(ctx, "i-0100"); err != nil || out != "up\n" {
		t.Fatalf("poll after a drop = %q, %v", out, err)
	}
	if n := e.proxy.Accepted(); n != 2 {
		t.Errorf("%d handshakes, want 2 (one redial)", n)
	}
}

func TestPoolForgetAndCloseLeaveNoConnection(t *testing.T) {
	e := newPoolEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	baseline := runtime.NumGoroutine()
	for _, id := range []string{"i-a", "i-b", "i-c"} {
		if _, err := e.poll(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if !e.proxy.WaitLive(3, 10*time.Second) {
		t.Fatalf("%d connections open, want 3", e.proxy.Live())
	}
	// The cluster of i-b is torn down.
	e.pool.Forget("cluster-i-b")
	if !e.proxy.WaitLive(2, 10*time.Second) {
		t.Fatalf("%d connections open after Forget, want 2", e.proxy.Live())
	}
	if n := e.pool.Open(); n != 2 {
		t.Errorf("pool has %d open after Forget, want 2", n)
	}
	// A runner held across Forget fails rather than redialling.
	cfg := e.cfg
	cfg.HostID = "i-a"
	r, err := e.pool.Runner(ctx, "cluster-i-a", cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.pool.Forget("cluster-i-a")
	if _, err := r.Exec(ctx, "true", nil); !errors.Is(err, errClosed) {
		t.Errorf("Exec after Forget = %v, want the runner closed", err)
	}
	r.Close()
	// The controller stops.
	if err := e.pool.Close(); err != nil {
		t.Fatal(err)
	}
	if n := e.pool.Open(); n != 0 {
		t.Errorf("pool has %d open after Close, want 0", n)
	}
	if !e.proxy.WaitLive(0, 10*time.Second) {
		t.Fatalf("%d connections open after Close, want 0", e.proxy.Live())
	}
	if _, err := e.poll(ctx, "i-c"); !errors.Is(err, errClosed) {
		t.Errorf("poll after Close = %v, want the pool closed", err)
	}
	accepted := e.proxy.Accepted()
	if accepted != 3 {
		t.Errorf("%d handshakes, want 3 (one per node)", accepted)
	}
	// Every connection's goroutines (the client's, the watcher) end:
	// they stop as their closed connections' reads return.
	if n := settledGoroutines(baseline, 10*time.Second); n > baseline {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before the first connection:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
	}
}

// settledGoroutines waits, at most d, for the number of goroutines to come
// down to want, and returns the last count.
func settledGoroutines(want int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPoolClosesIdleConnections(t *testing.T) {
	e := newPoolEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e.pool.IdleAfter = 10 * time.Minute
	if _, err := e.poll(ctx, "i-old"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(6 * time.Minute)
	if _, err := e.poll(ctx, "i-new"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5 * time.Minute)
	// i-old was last used 11 minutes ago, i-new 5: a sweep now closes
	// the first only.
	if _, err := e.poll(ctx, "i-new"); err != nil {
		t.Fatal(err)
	}
	if !e.proxy.WaitLive(1, 10*time.Second) {
		t.Fatalf("%d connections open, want 1 (the idle one closed)", e.proxy.Live())
	}
	if n := e.pool.Open(); n != 1 {
		t.Errorf("pool has %d open, want 1", n)
	}
}

func TestPoolRedialsANodeThatMoved(t *testing.T) {
	e := newPoolEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.poll(ctx, "i-0100"); err != nil {
		t.Fatal(err)
	}
	// The instance was stopped and started: a new address.
	other := testenv.StartCountingProxy(t, e.sshd.Addr)
	e.cfg.Addr = other.Addr()
	if out, err := e.poll(ctx, "i-0100"); err != nil || out != "up\n" {
		t.Fatalf("poll at the new address = %q, %v", out, err)
	}
	if other.Accepted() != 1 || !e.proxy.WaitLive(0, 10*time.Second) {
		t.Errorf("new address dialled %d times, old one has %d open; want 1 and 0", other.Accepted(), e.proxy.Live())
	}
}

func TestPoolDialsABootingNodeAtEveryAsk(t *testing.T) {
	e := newPoolEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Never reached yet: no back-off holds the tries of the launch's wait.
	e.proxy.Refuse(true)
	for i := 0; i < 3; i++ {
		_, err := e.poll(ctx, "i-boot")
		if err == nil {
			t.Fatal("a poll of a refusing node succeeded")
		}
		if strings.Contains(err.Error(), "not dialled again") {
			t.Fatalf("try %d of a node never reached was held back: %v", i+1, err)
		}
	}
	e.proxy.Refuse(false)
	if out, err := e.poll(ctx, "i-boot"); err != nil || out != "up\n" {
		t.Fatalf("poll once the node answers = %q, %v", out, err)
	}
}

func TestPoolDropsAConnectionThatWentSilent(t *testing.T) {
	e := newPoolEnv(t)
	e.pool.AliveTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.poll(ctx, "i-0100"); err != nil {
		t.Fatal(err)
	}
	// The peer goes silent without closing while a command runs: the
	// command runs out of its time, and the connection, answering no
	// keepalive, is dropped.
	r, err := e.pool.Runner(ctx, "cluster-i-0100", e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(t.TempDir(), "started")
	short, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := r.Exec(short, "touch "+ShellQuote(mark)+"; sleep 60", nil)
		done <- err
	}()
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the command ended before it started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	e.proxy.Silence()
	stop()
	if err := <-done; err == nil {
		t.Fatal("a command over a silent connection succeeded")
	}
	r.Close()
	if n := e.pool.Open(); n != 0 {
		t.Fatalf("%d connections kept after one went silent, want 0", n)
	}
	// The next check dials afresh (no back-off: the node was not refused).
	if out, err := e.poll(ctx, "i-0100"); err != nil || out != "up\n" {
		t.Fatalf("poll after the silent connection = %q, %v", out, err)
	}
	if n := e.proxy.Accepted(); n != 2 {
		t.Errorf("%d handshakes, want 2", n)
	}
}
