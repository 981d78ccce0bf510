// Package sshrun is a provision.Runner over SSH: each Exec is one session
// running bash on the node, reached directly or through an OpenSSH-style
// proxy command, with the host key pinned on first contact. A Pool keeps
// one connection per node open, so that the runners of every status check
// share it and a check costs no handshake.
//
// It must not import sortie/controller/...: a provider's part knows nothing of
// jobs.
package sshrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"

	"sortie/provision"
)

// Config says how to reach one node.
type Config struct {
	// Addr is host or host:port (port 22 when absent).
	Addr string
	// User to log in as.
	User string
	// Signer is sortie's key (LoadOrCreateKey).
	Signer ssh.Signer
	// HostKeyStore pins the node's host key under HostID.
	HostKeyStore HostKeyStore
	// HostID names the host for pinning, e.g. the instance id, so that a new
	// instance reusing an address is not mistaken for the old one. Empty
	// means Addr.
	HostID string
	// ProxyCommand, when set, is run with bash and its stdin/stdout carry the
	// connection; %h, %p and %r are replaced as in OpenSSH.
	ProxyCommand string
	// Dir is the node's directory for this cluster on the remote side.
	Dir string
	// Timeout bounds connecting and the SSH handshake; zero means 30s.
	Timeout time.Duration
}

// Runner runs commands on one node over one SSH connection, redialling once
// when the connection has dropped since the last command: its own (Dial),
// or the node's in a Pool.
type Runner struct {
	cfg    Config
	host   string
	port   string
	mu     sync.Mutex
	client *ssh.Client
	closed bool
	node   *poolNode // a Pool's runner: the connection is the pool's
}

var _ provision.Runner = (*Runner)(nil)

// Dial connects to the node and checks its host key. The runner owns its
// connection; a Pool's runners share one per node.
func Dial(ctx context.Context, cfg Config) (*Runner, error) {
	cfg, host, port, err := normalize(cfg)
	if err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, host: host, port: port}
	client, err := dialClient(ctx, cfg, host, port)
	if err != nil {
		return nil, err
	}
	r.client = client
	return r, nil
}

// dialClient connects to host:port as cfg says and checks the host key.
func dialClient(ctx context.Context, cfg Config, host, port string) (*ssh.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	where := fmt.Sprintf("%s@%s (%s)", cfg.User, net.JoinHostPort(host, port), cfg.HostID)
	conn, err := dialTransport(ctx, cfg, host, port)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", where, err)
	}
	var hostKeyErr error
	config := &ssh.ClientConfig{
		User: cfg.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(cfg.Signer)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			hostKeyErr = cfg.HostKeyStore.Pin(cfg.HostID, key)
			return hostKeyErr
		},
	}
	type result struct {
		c     ssh.Conn
		chans <-chan ssh.NewChannel
		reqs  <-chan *ssh.Request
		err   error
	}
	done := make(chan result, 1)
	go func() {
		c, chans, reqs, err := ssh.NewClientConn(conn, net.JoinHostPort(host, port), config)
		done <- result{c, chans, reqs, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			conn.Close()
			if hostKeyErr != nil {
				return nil, fmt.Errorf("ssh %s: %w", where, hostKeyErr)
			}
			return nil, fmt.Errorf("ssh %s: %w", where, res.err)
		}
		return ssh.NewClient(res.c, res.chans, res.reqs), nil
	case <-ctx.Done():
		conn.Close()
		<-done
		return nil, fmt.Errorf("ssh %s: %w", where, ctx.Err())
	}
}

// Dir implements provision.Runner.
func (r *Runner) Dir() string { return r.cfg.Dir }

// Close implements provision.Runner. A Pool's runner leaves the node's
// connection open for the next.
func (r *Runner) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.client == nil {
		return nil
	}
	err := r.client.Close()
	r.client = nil
	return err
}

// session opens a session, redialling once if the connection has died;
// done closes it.
func (r *Runner) session(ctx context.Context) (*ssh.Session, func(), error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, nil, errClosed
	}
	if r.node != nil {
		return r.node.session(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, nil, errClosed // closed meanwhile: dial nothing
	}
	if r.client != nil {
		s, err := r.client.NewSession()
		if err == nil {
			return s, func() { s.Close() }, nil
		}
		r.client.Close()
		r.client = nil
	}
	client, err := dialClient(ctx, r.cfg, r.host, r.port)
	if err != nil {
		return nil, nil, err
	}
	r.client = client
	s, err := client.NewSession()
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}

// Exec implements provision.Runner: script runs under bash -c on the node.
func (r *Runner) Exec(ctx context.Context, script string, stdin io.Reader) ([]byte, error) {
	s, done, err := r.session(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: 64 * 1024}
	s.Stdout = &stdout
	s.Stderr = stderr
	if stdin != nil {
		s.Stdin = stdin
	}
	code, waited, err := r.run(ctx, s, script)
	switch {
	case !waited:
		return nil, err
	case err != nil:
		return stdout.Bytes(), err
	case code != 0:
		return stdout.Bytes(), &provision.ExitError{Code: code, Stderr: stderr.String()}
	}
	return stdout.Bytes(), nil
}

// run starts script under bash in s and waits for it, killing it when ctx
// ends first. waited says whether it got to the end of the wait: code is
// then its exit status (128+N for signal N), or err why the session ended
// without one.
func (r *Runner) run(ctx context.Context, s *ssh.Session, script string) (code int, waited bool, err error) {
	if err := s.Start("bash -c " + ShellQuote(script)); err != nil {
		return 0, false, fmt.Errorf("ssh exec on %s: %w", r.cfg.HostID, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		s.Signal(ssh.SIGKILL)
		s.Close()
		if r.node != nil {
			// A shared connection whose peer went silent (a NAT that
			// forgot it) would hang every later command: one that does
			// not answer a keepalive is dropped, and the next use dials.
			r.node.checkAlive()
		}
		return 0, false, fmt.Errorf("ssh exec on %s: %w", r.cfg.HostID, ctx.Err())
	}
	var exitErr *ssh.ExitError
	switch {
	case err == nil:
		return 0, true, nil
	case errors.As(err, &exitErr):
		if sig := exitErr.Signal(); sig != "" {
			return 128 + signalNumbers[ssh.Signal(sig)], true, nil
		}
		return exitErr.ExitStatus(), true, nil
	}
	return 0, true, fmt.Errorf("ssh exec on %s: %w", r.cfg.HostID, err)
}

// ShellQuote quotes s as one word for a POSIX shell.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// signalNumbers maps the SSH protocol's signal names to Linux numbers, for
// the shell's 128+n exit code convention.
var signalNumbers = map[ssh.Signal]int{
	ssh.SIGHUP:  1,
	ssh.SIGINT:  2,
	ssh.SIGQUIT: 3,
	ssh.SIGILL:  4,
	ssh.SIGABRT: 6,
	ssh.SIGFPE:  8,
	ssh.SIGKILL: 9,
	ssh.SIGUSR1: 10,
	ssh.SIGSEGV: 11,
	ssh.SIGUSR2: 12,
	ssh.SIGPIPE: 13,
	ssh.SIGALRM: 14,
	ssh.SIGTERM: 15,
}

// Attach implements provision.Attacher: script runs under bash on the node
// with stdio's streams, in a pty when stdio.TTY asks for one (an
// interactive shell), and its exit status is returned.
func (r *Runner) Attach(ctx context.Context, script string, stdio provision.Stdio) (int, error) {
	s, done, err := r.session(ctx)
	if err != nil {
		return 0, err
	}
	defer done()
	s.Stdin, s.Stdout, s.Stderr = stdio.In, stdio.Out, stdio.Err
	if stdio.TTY {
		term, rows, cols := stdio.Term, stdio.Rows, stdio.Cols
		if term == "" {
			term = "xterm"
		}
		if rows <= 0 || cols <= 0 {
			rows, cols = 24, 80
		}
		if err := s.RequestPty(term, rows, cols, ssh.TerminalModes{ssh.ECHO: 1}); err != nil {
			return 0, fmt.Errorf("ssh pty on %s: %w", r.cfg.HostID, err)
		}
	}
	code, _, err := r.run(ctx, s, script)
	return code, err
}
