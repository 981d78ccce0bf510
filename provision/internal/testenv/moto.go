// Package testenv starts what the cloud backends' tests run against: the moto
// EC2 emulator, a fault-injecting proxy in front of it, and a private sshd
// that plays every instance's SSH endpoint. Everything binds to 127.0.0.1 and
// is stopped by t.Cleanup. The AWS playground (provision/aws/playground)
// starts the same for a person trying sortie without an account.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TB is what starting the stand-ins needs of its caller: a test's
// testing.TB, or the playground, which reports failures on its own terms,
// runs the cleanups when it stops and keeps temporary files in its folder.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Moto is a running moto_server.
type Moto struct {
	// URL is the endpoint, http://127.0.0.1:PORT.
	URL string
}

// StartMoto starts moto_server on a free port and waits until it answers.
// A machine without moto fails the test with how to install it: skipping
// would let the AWS backend go untested without anyone noticing.
func StartMoto(t TB) *Moto {
	t.Helper()
	return StartMotoWith(t)
}

// StartMotoWith is StartMoto with more of moto's settings in its
// environment, e.g. MOTO_AMIS_PATH=FILE to serve the images FILE lists
// (a JSON list in moto's own format) in place of its default ones.
func StartMotoWith(t TB, env ...string) *Moto {
	t.Helper()
	SkipShort(t, "the moto EC2 emulator")
	if out, err := exec.Command("python3", "-c", "import moto").CombinedOutput(); err != nil {
		t.Fatalf("the AWS tests need the moto EC2 emulator: python3 -c 'import moto' failed (%v: %s); install it with: pip install 'moto[server]'",
			err, strings.TrimSpace(string(out)))
	}
	endpoint, stop, err := runMoto(context.Background(), filepath.Join(t.TempDir(), "moto.log"), env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &Moto{URL: endpoint}
}

// RunMoto runs moto_server on a free port of 127.0.0.1, its output in
// logPath, until stop; it returns once moto answers.
func RunMoto(ctx context.Context, logPath string) (endpoint string, stop func(), err error) {
	return runMoto(ctx, logPath, nil)
}

func runMoto(ctx context.Context, logPath string, env []string) (endpoint string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := []string{"-H", "127.0.0.1", "-p", fmt.Sprint(port)}
	var cmd *exec.Cmd
	if path, err := exec.LookPath("moto_server"); err == nil {
		cmd = exec.Command(path, args...)
	} else {
		cmd = exec.Command("python3", append([]string{"-m", "moto.server"}, args...)...)
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// moto must not pick up the developer's real AWS settings.
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
		"AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_CONFIG_FILE=/dev/null")
	cmd.Env = append(cmd.Env, env...)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return "", nil, fmt.Errorf("start moto_server (pip install 'moto[server]'): %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logFile.Close(); close(exited) }()
	stop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); ; {
		try, cancel := context.WithTimeout(ctx, time.Second)
		_, err := Call(try, endpoint, "us-east-1", "DescribeRegions", nil)
		cancel()
		if err == nil {
			return endpoint, stop, nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return "", nil, fmt.Errorf("moto_server exited before answering: %s", log)
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logPath)
			return "", nil, fmt.Errorf("moto_server did not answer on %s within 60s: %s", endpoint, log)
		}
	}
}

// Call sends one EC2 query-protocol request straight to url, bypassing any
// SDK; tests use it to act as "the cloud" (e.g. take an instance away). moto
// takes the region from the credential scope and ignores the signature.
func Call(ctx context.Context, endpoint, region, action string, params map[string]string) ([]byte, error) {
	form := url.Values{"Action": {action}, "Version": {"2016-11-15"}}
	for k, v := range params {
		form.Set(k, v)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	req.Header.Set("Authorization", fmt.Sprintf(
		"AWS4-HMAC-SHA256 Credential=testing/20260101/%s/ec2/aws4_request, SignedHeaders=host, Signature=0", region))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return body.Bytes(), fmt.Errorf("%s in %s: HTTP %d: %s", action, region, resp.StatusCode, body.String())
	}
	return body.Bytes(), nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// SkipShort skips t under -short (make unit), which starts no server
// outside the test binary: what (moto, an sshd) is started by make test.
// Outside a test (the AWS playground) it does nothing.
func SkipShort(t TB, what string) {
	t.Helper()
	if testing.Testing() && testing.Short() {
		t.Skipf("needs %s, which -short (make unit) does not start; make test runs it", what)
	}
}
