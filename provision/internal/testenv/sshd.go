package testenv

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	_ "embed"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHDPath is where Debian's openssh-server puts the daemon.
const SSHDPath = "/usr/sbin/sshd"

//go:embed ensure-sshd.sh
var ensureSSHDScript string

// SSHD is a private OpenSSH server on 127.0.0.1, key-only, with its own
// config, host key and authorized_keys in a temporary directory.
type SSHD struct {
	// Addr is 127.0.0.1:PORT.
	Addr string
	// User is who the tests log in as: the user running them.
	User string
	// HostKey is the server's host key.
	HostKey ssh.PublicKey
	// ProxyCommand is an ssh.proxy_command that reaches this sshd whatever
	// host and port it is given, so every emulated instance lands here.
	ProxyCommand string
	dir          string
	forward      string
}

// EnsureSSHD installs openssh-server when /usr/sbin/sshd is missing, with
// ensure-sshd.sh, failing the test with what to do when it cannot.
func EnsureSSHD(t TB) {
	t.Helper()
	SkipShort(t, "an sshd")
	if _, err := os.Stat(SSHDPath); err == nil {
		return
	}
	out, err := exec.Command("bash", "-c", ensureSSHDScript).CombinedOutput()
	if err != nil {
		t.Fatalf("the SSH tests need OpenSSH's server at %s and installing it failed (%v): %s\ninstall it with: apt-get install -y openssh-server",
			SSHDPath, err, out)
	}
}

// StartSSHD starts a private sshd and stops it, and every session it
// started, on cleanup.
func StartSSHD(t TB) *SSHD {
	t.Helper()
	EnsureSSHD(t)
	s, stop, err := RunSSHD(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s
}

// RunSSHD starts a private sshd keeping its files in dir, until stop
// (which ends every session it started too): StartSSHD for a program that
// is not a test. sshd must be installed (EnsureSSHD).
func RunSSHD(dir string) (s *SSHD, stop func(), err error) {
	me, err := user.Current()
	if err != nil {
		return nil, nil, err
	}
	hostKey, err := writeHostKey(filepath.Join(dir, "host_ed25519"))
	if err != nil {
		return nil, nil, err
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, nil, 0o600); err != nil {
		return nil, nil, err
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation directory; absent on machines where
		// the package was installed but never started.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	// Sessions get a home of their own: bash run by sshd reads ~/.bashrc,
	// and the machine's (pyenv's rehash, which waits on a lock) must not
	// stand between the tests and their nodes, as it would not on a VM.
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, nil, err
	}
	config := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PrintMotd no
PermitUserRC no
MaxSessions 100
MaxStartups 100
LogLevel ERROR
SetEnv HOME=%s
`, port, filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "sshd.pid"), authorized, home)
	configPath := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, nil, err
	}
	logPath := filepath.Join(dir, "sshd.log")
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", configPath, "-E", logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %v", SSHDPath, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	stop = func() {
		killDescendants(cmd.Process.Pid)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}

	s = &SSHD{Addr: fmt.Sprintf("127.0.0.1:%d", port), User: me.Username, HostKey: hostKey, dir: dir}
	// One process copying both ways (a bash pair of cats would leave
	// orphans that a container's init may never reap).
	forward := filepath.Join(dir, "forward.py")
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			stop()
			return nil, nil, fmt.Errorf("the SSH forwarder needs python3: %v", err)
		}
	}
	script := fmt.Sprintf(`#!%s
# usage: forward.py HOST PORT [TO_PORT]; HOST and PORT ignored: every host
# is this sshd, on 127.0.0.1 at TO_PORT when given (a proxy in front of it).
import os, select, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[3]) if len(sys.argv) > 3 else %d))
ins, out = sys.stdin.fileno(), sys.stdout.fileno()
open_in = True
while True:
    r, _, _ = select.select([s, ins] if open_in else [s], [], [])
    if s in r:
        b = s.recv(65536)
        if not b:
            break
        while b:
            b = b[os.write(out, b):]
    if open_in and ins in r:
        b = os.read(ins, 65536)
        if b:
            s.sendall(b)
        else:
            s.shutdown(socket.SHUT_WR)
            open_in = False
`, python, port)
	if err := os.WriteFile(forward, []byte(script), 0o755); err != nil {
		stop()
		return nil, nil, err
	}
	s.forward = forward
	s.ProxyCommand = forward + " %h %p"

	deadline := time.Now().Add(20 * time.Second)
	for !s.ready() {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			stop()
			return nil, nil, fmt.Errorf("sshd exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			stop()
			return nil, nil, fmt.Errorf("sshd did not answer on %s within 20s: %s", s.Addr, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s, stop, nil
}

// ProxyCommandVia is a proxy command like ProxyCommand that reaches this
// sshd through whatever listens on 127.0.0.1:port (a CountingProxy).
func (s *SSHD) ProxyCommandVia(port int) string {
	return fmt.Sprintf("%s %%h %%p %d", s.forward, port)
}

// AuthorizeLine lets the holder of the key in an authorized_keys line log
// in: Authorize for a program that is not a test.
func (s *SSHD) AuthorizeLine(line string) error {
	f, err := os.OpenFile(filepath.Join(s.dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(strings.TrimSpace(line) + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Authorize lets the holder of the key in an authorized_keys line log in.
func (s *SSHD) Authorize(t TB, line string) {
	t.Helper()
	if err := s.AuthorizeLine(line); err != nil {
		t.Fatal(err)
	}
}

// ready reports whether sshd accepts connections and sends its banner.
func (s *SSHD) ready() bool {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-")
}

func writeHostKey(path string) (ssh.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "sortie-test-host")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, err
	}
	return ssh.NewPublicKey(pub)
}
