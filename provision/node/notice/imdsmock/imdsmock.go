// Package imdsmock runs github.com/aws/amazon-ec2-metadata-mock, AWS's own
// simulator of the EC2 instance metadata service, for tests and benchmarks.
// The mock keeps its configuration in package variables, so it runs as a
// program of its own: Build compiles the version go.mod pins (a tool
// dependency), Start serves it on a free 127.0.0.1 port.
package imdsmock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Package is the mock's main package, named by go.mod's tool directive.
const Package = "github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock"

// Build compiles the mock into dir and returns the program's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "ec2-metadata-mock")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, Package)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", Package, err, out.Bytes())
	}
	return bin, nil
}

// Mock is one running mock.
type Mock struct {
	// Endpoint is its base URL, http://127.0.0.1:PORT.
	Endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
	out      *lockedBuffer
}

// lockedBuffer is what the mock prints, readable while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start runs the mock program bin with args (for example "spot",
// "--mock-trigger-time", t) on a free local port, with its home in dir so it
// reads no configuration of the user's, and waits until it answers.
func Start(ctx context.Context, bin, dir string, args ...string) (*Mock, error) {
	var last error
	for range 3 {
		m, err := start(ctx, bin, dir, args)
		if err == nil {
			return m, nil
		}
		last = err
	}
	return nil, last
}

func start(ctx context.Context, bin, dir string, args []string) (*Mock, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	return StartOn(ctx, bin, dir, port, args...)
}

// StartOn is Start on a given port: the caller tells its clients the
// address before the mock serves.
func StartOn(ctx context.Context, bin, dir, port string, args ...string) (*Mock, error) {
	full := append(append([]string{}, args...), "--hostname", "127.0.0.1", "--port", port, "--imdsv2")
	cmd := exec.Command(bin, full...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the IMDS mock: %w", err)
	}
	m := &Mock{Endpoint: "http://127.0.0.1:" + port, cmd: cmd, done: make(chan struct{}), out: out}
	go func() { cmd.Wait(); close(m.done) }()
	if err := m.ready(ctx); err != nil {
		m.Stop()
		return nil, fmt.Errorf("the IMDS mock on port %s: %w\n%s", port, err, out.String())
	}
	return m, nil
}

// ready waits until the mock hands out a session token.
func (m *Mock) ready(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-m.done:
			return errors.New("exited before it answered")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, m.Endpoint+"/latest/api/token", nil)
		req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("did not answer within 30s")
}

// Stop ends the mock and waits for it.
func (m *Mock) Stop() {
	m.cmd.Process.Kill()
	<-m.done
}

// Output is what the mock printed so far, for a failing test's message.
func (m *Mock) Output() string { return m.out.String() }

// FreePort is a local port no one listened on a moment ago.
func FreePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}
