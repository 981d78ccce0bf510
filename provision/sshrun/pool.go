package sshrun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Pool keeps one SSH connection open per node and hands out Runners that
// share it: every command, poll and log read of a node is a new session
// over the one connection, so a status check costs no handshake. A
// connection that drops is dialled again at the next use; a dial that
// fails, once the node was reached, holds off the next one for a back-off
// that doubles up to MaxBackoff, and a use meanwhile fails at once with
// the last dial's error (the node is unreachable for now). A node never
// reached yet (booting) is dialled at every use, as the launch's wait
// paces it. It is safe for concurrent use.
type Pool struct {
	// Now is the clock of the back-off and of idle connections;
	// nil means time.Now.
	Now func() time.Time
	// MinBackoff is the wait after a first failed dial (default 1s);
	// each failure in a row doubles it up to MaxBackoff (default 16s).
	MinBackoff, MaxBackoff time.Duration
	// IdleAfter closes a connection no runner has used for that long
	// (default 10m): a node whose cluster someone else tore down is not
	// held open for ever.
	IdleAfter time.Duration
	// MaxSessions bounds the sessions open at once on one connection
	// (default 8): OpenSSH's sshd refuses more than its MaxSessions
	// (default 10) and a refusal would read as a broken node. A use past
	// it waits for a session to end.
	MaxSessions int
	// AliveTimeout is how long a connection has to answer a keepalive,
	// asked when a command on it ran out of time, before it is dropped
	// (default 5s).
	AliveTimeout time.Duration

	mu     sync.Mutex
	nodes  map[string]*poolNode
	closed bool
	swept  time.Time
	wg     sync.WaitGroup // the connections' watchers
}

// poolNode is one node's connection and its dialling state.
type poolNode struct {
	pool  *Pool
	key   string
	slots chan struct{}

	dialMu sync.Mutex // one dial at a time

	mu       sync.Mutex
	cfg      Config
	host     string
	port     string
	group    string
	client   *ssh.Client
	gone     bool
	failures int
	retryAt  time.Time
	lastErr  error
	used     time.Time
	// reached says a dial has succeeded once: only then does a failed one
	// hold off the next (a booting node is tried at every ask, as the
	// launch's wait paces it).
	reached bool
}

func (p *Pool) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Pool) backoff(failures int) time.Duration {
	lo, hi := p.MinBackoff, p.MaxBackoff
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = 16 * time.Second
	}
	d := lo
	for i := 1; i < failures && d < hi; i++ {
		d *= 2
	}
	return min(d, hi)
}

func (p *Pool) idleAfter() time.Duration {
	if p.IdleAfter > 0 {
		return p.IdleAfter
	}
	return 10 * time.Minute
}

// Runner returns a runner for the node cfg names (by HostID, else Addr),
// in group (a cluster's name, which Forget closes at once), over the
// node's connection, dialling it when none is open. Closing the runner
// leaves the connection open for the next one.
func (p *Pool) Runner(ctx context.Context, group string, cfg Config) (*Runner, error) {
	cfg, host, port, err := normalize(cfg)
	if err != nil {
		return nil, err
	}
	p.sweep()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("ssh %s: %w", cfg.HostID, errClosed)
	}
	if p.nodes == nil {
		p.nodes = map[string]*poolNode{}
	}
	n := p.nodes[cfg.HostID]
	if n == nil {
		slots := p.MaxSessions
		if slots <= 0 {
			slots = 8
		}
		n = &poolNode{pool: p, key: cfg.HostID, slots: make(chan struct{}, slots)}
		p.nodes[cfg.HostID] = n
	}
	p.mu.Unlock()

	n.mu.Lock()
	if n.cfg.Addr != cfg.Addr || n.cfg.Dir != cfg.Dir || n.cfg.User != cfg.User {
		// The node moved (a new address after a stop and start) or is
		// reached otherwise: the open connection is not to it any more.
		if n.client != nil && (n.cfg.Addr != cfg.Addr || n.cfg.User != cfg.User) {
			n.client.Close()
			n.client = nil
		}
		n.cfg, n.host, n.port = cfg, host, port
	}
	n.group = group
	n.used = p.now()
	n.mu.Unlock()

	if _, err := n.get(ctx); err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg, host: host, port: port, node: n}, nil
}

// get returns the node's open client, dialling it when there is none and
// the back-off allows.
func (n *poolNode) get(ctx context.Context) (*ssh.Client, error) {
	n.mu.Lock()
	if n.gone {
		n.mu.Unlock()
		return nil, fmt.Errorf("ssh %s: %w", n.key, errClosed)
	}
	if c := n.client; c != nil {
		n.mu.Unlock()
		return c, nil
	}
	n.mu.Unlock()

	n.dialMu.Lock()
	defer n.dialMu.Unlock()
	n.mu.Lock()
	if n.gone {
		n.mu.Unlock()
		return nil, fmt.Errorf("ssh %s: %w", n.key, errClosed)
	}
	if c := n.client; c != nil {
		n.mu.Unlock()
		return c, nil
	}
	now := n.pool.now()
	if now.Before(n.retryAt) {
		err := fmt.Errorf("ssh %s: not dialled again before %s, after %d failed dials in a row: %w",
			n.key, n.retryAt.Sub(now).Round(time.Millisecond), n.failures, n.lastErr)
		n.mu.Unlock()
		return nil, err
	}
	cfg, host, port := n.cfg, n.host, n.port
	n.mu.Unlock()

	c, err := dialClient(ctx, cfg, host, port)

	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		// A caller that gave up is no news about the node.
		if ctx.Err() == nil && n.reached {
			n.failures++
			n.retryAt = n.pool.now().Add(n.pool.backoff(n.failures))
			n.lastErr = err
		}
		return nil, err
	}
	if n.gone {
		c.Close()
		return nil, fmt.Errorf("ssh %s: %w", n.key, errClosed)
	}
	n.failures, n.retryAt, n.lastErr = 0, time.Time{}, nil
	n.client, n.reached = c, true
	n.pool.wg.Add(1)
	go func() {
		// The connection ending (the node went, the network dropped it,
		// Forget closed it) is noticed at once, not at the next use.
		defer n.pool.wg.Done()
		c.Wait()
		n.drop(c)
	}()
	return c, nil
}

// drop forgets c when it is still the node's client, and closes it.
func (n *poolNode) drop(c *ssh.Client) {
	n.mu.Lock()
	if n.client == c {
		n.client = nil
	}
	n.mu.Unlock()
	c.Close()
}

// checkAlive sends the node's connection a keepalive and drops it when
// no answer comes within the pool's AliveTimeout. Any answer will do:
// OpenSSH's refusal of the request is one.
func (n *poolNode) checkAlive() {
	n.mu.Lock()
	c := n.client
	n.mu.Unlock()
	if c == nil {
		return
	}
	wait := n.pool.AliveTimeout
	if wait <= 0 {
		wait = 5 * time.Second
	}
	answered := make(chan error, 1)
	go func() {
		_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
		answered <- err
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-answered:
		if err != nil {
			n.drop(c)
		}
	case <-t.C:
		n.drop(c) // closing it ends the request's wait too
	}
}

// close closes the node's connection for good.
func (n *poolNode) close() {
	n.mu.Lock()
	n.gone = true
	c := n.client
	n.client = nil
	n.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// session opens a session on the node's connection, within one of its
// slots: done closes the session and frees the slot. A connection that
// cannot open one is dropped, and dialled again once.
func (n *poolNode) session(ctx context.Context) (*ssh.Session, func(), error) {
	select {
	case n.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("ssh %s: waiting for a session: %w", n.key, ctx.Err())
	}
	release := func() { <-n.slots }
	for try := 0; ; try++ {
		c, err := n.get(ctx)
		if err != nil {
			release()
			return nil, nil, err
		}
		n.mu.Lock()
		timeout := n.cfg.Timeout
		n.mu.Unlock()
		sctx, cancel := context.WithTimeout(ctx, timeout)
		s, err := newSession(sctx, c)
		cancel()
		if err == nil {
			return s, func() { s.Close(); release() }, nil
		}
		var refused *ssh.OpenChannelError
		if errors.As(err, &refused) || try > 0 || ctx.Err() != nil {
			// The server answered (it refused a channel): the connection
			// is fine. Or it was dialled afresh and still failed.
			if !errors.As(err, &refused) {
				n.drop(c)
			}
			release()
			return nil, nil, fmt.Errorf("ssh session on %s: %w", n.key, err)
		}
		n.drop(c)
	}
}

// newSession opens a session on c, giving up when ctx ends: a connection
// whose peer vanished without a word would otherwise wait for ever.
func newSession(ctx context.Context, c *ssh.Client) (*ssh.Session, error) {
	type result struct {
		s   *ssh.Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := c.NewSession()
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-ctx.Done():
		// Closing the connection ends the wait; the caller drops it.
		c.Close()
		r := <-done
		if r.s != nil {
			r.s.Close()
		}
		return nil, ctx.Err()
	}
}

// Forget closes the connections of group's nodes (a cluster torn down).
func (p *Pool) Forget(group string) {
	p.mu.Lock()
	gone := p.take(func(n *poolNode) bool { return n.group == group })
	p.mu.Unlock()
	for _, n := range gone {
		n.close()
	}
}

// take removes the nodes match holds for (each asked under its own lock)
// and returns them, to be closed once p.mu is let go; p.mu is held.
func (p *Pool) take(match func(n *poolNode) bool) []*poolNode {
	var gone []*poolNode
	for k, n := range p.nodes {
		n.mu.Lock()
		ok := match(n)
		n.mu.Unlock()
		if ok {
			gone = append(gone, n)
			delete(p.nodes, k)
		}
	}
	return gone
}

// sweep closes the connections no runner has used for IdleAfter, at most
// once per half of it.
func (p *Pool) sweep() {
	now := p.now()
	idle := p.idleAfter()
	p.mu.Lock()
	if now.Sub(p.swept) < idle/2 {
		p.mu.Unlock()
		return
	}
	p.swept = now
	gone := p.take(func(n *poolNode) bool { return now.Sub(n.used) >= idle })
	p.mu.Unlock()
	for _, n := range gone {
		n.close()
	}
}

// Open is how many nodes have a connection open.
func (p *Pool) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	open := 0
	for _, n := range p.nodes {
		n.mu.Lock()
		if n.client != nil {
			open++
		}
		n.mu.Unlock()
	}
	return open
}

// Close closes every connection and refuses new runners; it returns once
// every connection's watcher has ended.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	nodes := p.nodes
	p.nodes = nil
	p.mu.Unlock()
	for _, n := range nodes {
		n.close()
	}
	p.wg.Wait()
	return nil
}

// normalize checks cfg and fills its defaults: port 22, HostID from the
// address, a 30s timeout.
func normalize(cfg Config) (Config, string, string, error) {
	if cfg.Addr == "" || cfg.User == "" || cfg.Signer == nil || cfg.HostKeyStore == nil {
		return cfg, "", "", errors.New("ssh dial: Addr, User, Signer and HostKeyStore are required")
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host, port = cfg.Addr, "22"
	}
	if cfg.HostID == "" {
		cfg.HostID = net.JoinHostPort(host, port)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	return cfg, host, port, nil
}
