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
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hostKey := writeHostKey(t, filepath.Join(dir, "host_ed25519"))
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd's privilege separation directory; absent on machines where
		// the package was installed but never started.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := FreePort(t)
	// Sessions get a home of their own: bash run by sshd reads ~/.bashrc,
	// and the machine's (pyenv's rehash, which waits on a lock) must not
	// stand between the tests and their nodes, as it would not on a VM.
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
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
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "sshd.log")
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", configPath, "-E", logPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", SSHDPath, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		killDescendants(cmd.Process.Pid)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})

	s := &SSHD{Addr: fmt.Sprintf("127.0.0.1:%d", port), User: me.Username, HostKey: hostKey, dir: dir}
	// One process copying both ways (a bash pair of cats would leave
	// orphans that a container's init may never reap).
	forward := filepath.Join(dir, "forward.py")
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		if python, err = exec.LookPath("python3"); err != nil {
			t.Fatalf("the SSH forwarder needs python3: %v", err)
		}
	}
	script := fmt.Sprintf(`#!%s
# usage: forward.py HOST PORT; both ignored: every host is this sshd.
import os, select, socket, sys
s = socket.create_connection(("127.0.0.1", %d))
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
		t.Fatal(err)
	}
	s.ProxyCommand = forward + " %h %p"

	deadline := time.Now().Add(20 * time.Second)
	for !s.ready() {
		select {
		case <-exited:
			log, _ := os.ReadFile(logPath)
			t.Fatalf("sshd exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logPath)
			t.Fatalf("sshd did not answer on %s within 20s: %s", s.Addr, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// Authorize lets the holder of the key in an authorized_keys line log in.
func (s *SSHD) Authorize(t TB, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(s.dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.TrimSpace(line) + "\n"); err != nil {
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

func writeHostKey(t TB, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "sortie-test-host")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
