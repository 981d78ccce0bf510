package sshrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/internal/testenv"
)

func dialTest(t *testing.T, sshd *testenv.SSHD, keys, hostID string) (*Runner, error) {
	t.Helper()
	signer, line, err := LoadOrCreateKey(keys)
	if err != nil {
		t.Fatal(err)
	}
	sshd.Authorize(t, line)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return Dial(ctx, Config{
		Addr:         "203.0.113.7",
		User:         sshd.User,
		Signer:       signer,
		HostKeyStore: NewKnownHosts(filepath.Join(keys, KnownHostsFile)),
		HostID:       hostID,
		ProxyCommand: sshd.ProxyCommand,
		Dir:          "/nodes/" + hostID,
	})
}

func TestExecThroughProxyCommand(t *testing.T) {
	sshd := testenv.StartSSHD(t)
	r, err := dialTest(t, sshd, t.TempDir(), "i-0001")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()

	out, err := r.Exec(ctx, `echo "args:$#"; printf '%s|' "it's"; cat`, strings.NewReader("from stdin\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "args:0\nit's|from stdin\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}

	_, err = r.Exec(ctx, "echo oops >&2; exit 3", nil)
	var exit *provision.ExitError
	if !errors.As(err, &exit) || exit.Code != 3 || strings.TrimSpace(exit.Stderr) != "oops" {
		t.Errorf("exit 3: got %#v (%v), want ExitError{3, oops}", exit, err)
	}

	_, err = r.Exec(ctx, "kill -KILL $$", nil)
	if !errors.As(err, &exit) || exit.Code != 137 {
		t.Errorf("killed: got %v, want exit 137", err)
	}

	if r.Dir() != "/nodes/i-0001" {
		t.Errorf("Dir = %q", r.Dir())
	}
}

func TestExecRedialsAfterDrop(t *testing.T) {
	sshd := testenv.StartSSHD(t)
	r, err := dialTest(t, sshd, t.TempDir(), "i-0002")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Drop the connection under the runner, as a network blip would.
	r.client.Close()
	out, err := r.Exec(context.Background(), "echo back", nil)
	if err != nil || string(out) != "back\n" {
		t.Fatalf("Exec after drop = %q, %v", out, err)
	}
}

func TestExecHonoursContext(t *testing.T) {
	sshd := testenv.StartSSHD(t)
	r, err := dialTest(t, sshd, t.TempDir(), "i-0003")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = r.Exec(ctx, "sleep 30", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Exec returned after %v", d)
	}
}

func TestHostKeyPinnedPerHost(t *testing.T) {
	first := testenv.StartSSHD(t)
	second := testenv.StartSSHD(t) // another host key
	keys := t.TempDir()

	r, err := dialTest(t, first, keys, "i-0004")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	// Same instance id, different key: refused.
	_, err = dialTest(t, second, keys, "i-0004")
	var mismatch *HostKeyMismatchError
	if !errors.As(err, &mismatch) {
		t.Fatalf("dial with a changed host key: err = %v, want HostKeyMismatchError", err)
	}
	if mismatch.ID != "i-0004" || !strings.Contains(err.Error(), KnownHostsFile) {
		t.Errorf("mismatch error does not name the host and the file: %v", err)
	}
	// A new instance id pins its own key; the first host is still accepted.
	if r, err := dialTest(t, second, keys, "i-0005"); err != nil {
		t.Errorf("new host: %v", err)
	} else {
		r.Close()
	}
	if r, err := dialTest(t, first, keys, "i-0004"); err != nil {
		t.Errorf("pinned host again: %v", err)
	} else {
		r.Close()
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	_, line1, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, line2, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if line1 != line2 || !strings.HasPrefix(line1, "ssh-ed25519 ") {
		t.Errorf("key lines %q and %q: want one stable ed25519 key", line1, line2)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode = %v, want 0600", fi.Mode().Perm())
	}
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKey(dir); err == nil || !strings.Contains(err.Error(), KeyFile) {
		t.Errorf("corrupt key: err = %v, want one naming the file", err)
	}
}

func TestExpandProxyCommand(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "ssh -W %h:%p bastion", want: "ssh -W 10.0.0.5:22 bastion"},
		{in: "ssh -l %r -W %h:%p jump", want: "ssh -l ubuntu -W 10.0.0.5:22 jump"},
		{in: "echo 100%%", want: "echo 100%"},
		{in: "nc %x", err: "unknown token %x"},
		{in: "nc %", err: "lone %"},
	}
	for _, tt := range tests {
		got, err := ExpandProxyCommand(tt.in, "10.0.0.5", "22", "ubuntu")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// The test sshd gives sessions a home of their own, so the machine's
// ~/.bashrc (which bash run by sshd reads) never runs in the tests.
func TestSessionsDoNotReadTheMachinesBashrc(t *testing.T) {
	sshd := testenv.StartSSHD(t)
	r, err := dialTest(t, sshd, t.TempDir(), "i-0002")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := r.Exec(context.Background(), `echo "$HOME"`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if home, _ := os.UserHomeDir(); strings.TrimSpace(string(out)) == home {
		t.Errorf("sessions run with the machine's home %s", home)
	}
}

// Attach streams input and output, returns the command's status (not an
// error) and gives an interactive shell a terminal when asked.
func TestAttachStreamsAndReturnsTheStatus(t *testing.T) {
	sshd := testenv.StartSSHD(t)
	r, err := dialTest(t, sshd, t.TempDir(), "i-0002")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	var out, errb strings.Builder
	code, err := r.Attach(ctx, "cat; echo err >&2; exit 5", provision.Stdio{In: strings.NewReader("typed\n"), Out: &out, Err: &errb})
	if err != nil || code != 5 || out.String() != "typed\n" || errb.String() != "err\n" {
		t.Errorf("Attach: exit %d, %v, out %q, err %q; want 5, typed, err", code, err, out.String(), errb.String())
	}
	out.Reset()
	code, err = r.Attach(ctx, `if [ -t 0 ]; then echo "tty $TERM"; else echo none; fi`, provision.Stdio{In: strings.NewReader(""), Out: &out, TTY: true, Term: "vt100"})
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != "tty vt100" {
		t.Errorf("with a pty: exit %d, %v, out %q; want a terminal of type vt100", code, err, out.String())
	}
	out.Reset()
	code, err = r.Attach(ctx, `if [ -t 0 ]; then echo tty; else echo none; fi`, provision.Stdio{Out: &out})
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != "none" {
		t.Errorf("without: exit %d, %v, out %q; want no terminal", code, err, out.String())
	}
}
