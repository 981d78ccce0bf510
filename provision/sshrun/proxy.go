package sshrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ExpandProxyCommand substitutes OpenSSH's tokens in an ssh.proxy_command:
// %h host, %p port, %r remote user, %% a literal percent sign.
func ExpandProxyCommand(command, host, port, user string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(command); i++ {
		c := command[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(command) {
			return "", fmt.Errorf("proxy command %q: lone %% at the end (write %%%% for a percent sign)", command)
		}
		i++
		switch command[i] {
		case 'h':
			b.WriteString(host)
		case 'p':
			b.WriteString(port)
		case 'r':
			b.WriteString(user)
		case '%':
			b.WriteByte('%')
		default:
			return "", fmt.Errorf("proxy command %q: unknown token %%%c (known: %%h %%p %%r %%%%)", command, command[i])
		}
	}
	return b.String(), nil
}

// proxyConn is the SSH transport over a proxy command's stdin and stdout, as
// OpenSSH's ProxyCommand does. The command runs in its own process group so
// that closing the connection also ends whatever it started (nc, a nested ssh).
type proxyConn struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer
	done   chan struct{}
	once   sync.Once
	addr   proxyAddr
}

func startProxy(command string) (*proxyConn, error) {
	cmd := exec.Command("bash", "-c", command)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &proxyConn{cmd: cmd, stdin: stdin, stdout: stdout, stderr: &tailBuffer{max: 4096},
		done: make(chan struct{}), addr: proxyAddr(command)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start proxy command %q: %w", command, err)
	}
	go func() {
		cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *proxyConn) Read(p []byte) (int, error) {
	n, err := c.stdout.Read(p)
	if err != nil && n == 0 {
		if msg := c.stderrText(); msg != "" {
			return 0, fmt.Errorf("proxy command %s: %w (stderr: %s)", c.addr, err, msg)
		}
	}
	return n, err
}

func (c *proxyConn) Write(p []byte) (int, error) { return c.stdin.Write(p) }

// Close ends the proxy command and its process group, and reaps it.
func (c *proxyConn) Close() error {
	c.once.Do(func() {
		c.stdin.Close()
		if c.cmd.Process != nil {
			syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		}
		<-c.done
	})
	return nil
}

func (c *proxyConn) stderrText() string {
	// Give the command a moment to finish writing why it ended.
	select {
	case <-c.done:
	case <-time.After(100 * time.Millisecond):
	}
	return strings.TrimSpace(c.stderr.String())
}

func (c *proxyConn) LocalAddr() net.Addr                { return c.addr }
func (c *proxyConn) RemoteAddr() net.Addr               { return c.addr }
func (c *proxyConn) SetDeadline(t time.Time) error      { return nil }
func (c *proxyConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *proxyConn) SetWriteDeadline(t time.Time) error { return nil }

type proxyAddr string

func (a proxyAddr) Network() string { return "proxy" }
func (a proxyAddr) String() string  { return string(a) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}

// dialTransport opens the byte stream SSH runs over: the proxy command when
// one is set, else TCP.
func dialTransport(ctx context.Context, cfg Config, host, port string) (net.Conn, error) {
	if cfg.ProxyCommand == "" {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	}
	command, err := ExpandProxyCommand(cfg.ProxyCommand, host, port, cfg.User)
	if err != nil {
		return nil, err
	}
	return startProxy(command)
}

var errClosed = errors.New("runner closed")
