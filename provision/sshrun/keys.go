package sshrun

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/crypto/ssh"
)

// KeyFile is the private key's file name inside the keys directory; the
// public half sits beside it with ".pub" appended.
const KeyFile = "id_ed25519"

// KnownHostsFile is where host keys are pinned, inside the keys directory.
const KnownHostsFile = "known_hosts"

// LoadOrCreateKey returns sortie's SSH identity kept in dir (normally
// SORTIE_HOME/keys), generating an ed25519 key on first use. The second
// result is the public key as one authorized_keys line, without newline.
func LoadOrCreateKey(dir string) (ssh.Signer, string, error) {
	path := filepath.Join(dir, KeyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = createKey(dir, path)
	}
	if err != nil {
		return nil, "", fmt.Errorf("ssh key %s: %w", path, err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	if err != nil {
		return nil, "", fmt.Errorf("ssh key %s: %w (delete it to have sortie generate a new one)", path, err)
	}
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	return signer, line, nil
}

// createKey writes a new key with 0600 and returns its PEM. The key is first
// written under a temporary name and linked into place, so two processes
// starting at once end up sharing whichever key won, never a torn file.
func createKey(dir, path string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "sortie")
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(block)
	tmp, err := os.CreateTemp(dir, ".key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return os.ReadFile(path)
		}
		return nil, err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sshPub), 0o600); err != nil {
		return nil, err
	}
	return data, nil
}

// HostKeyStore pins a host's key the first time it is seen.
type HostKeyStore interface {
	// Pin accepts key for id when it is the pinned one, pins it when id is
	// new, and returns a *HostKeyMismatchError when it differs.
	Pin(id string, key ssh.PublicKey) error
}

// HostKeyMismatchError is a host offering a key other than the pinned one:
// either the instance was replaced under the same id, or someone is in the way.
type HostKeyMismatchError struct {
	ID      string
	Pinned  string // SHA256 fingerprint
	Offered string
	File    string
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("host key of %s changed: pinned %s, offered %s; if the host was really replaced, delete its line from %s",
		e.ID, e.Pinned, e.Offered, e.File)
}

// KnownHosts is a HostKeyStore in a file of lines "<id> <authorized key>".
// It is safe for concurrent use, also by several processes (flock).
type KnownHosts struct {
	path string
	mu   sync.Mutex
}

// NewKnownHosts uses the file at path, created on the first pin.
func NewKnownHosts(path string) *KnownHosts { return &KnownHosts{path: path} }

// Path is the file holding the pins.
func (k *KnownHosts) Path() string { return k.path }

// Pin implements HostKeyStore.
func (k *KnownHosts) Pin(id string, key ssh.PublicKey) error {
	if id == "" || strings.ContainsAny(id, " \t\n") {
		return fmt.Errorf("pin host key: host id %q must be non-empty and without spaces", id)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
		return fmt.Errorf("pin host key: %w", err)
	}
	f, err := os.OpenFile(k.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("pin host key: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("pin host key: lock %s: %w", k.path, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)

	offered := key.Marshal()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.SplitN(strings.TrimSpace(sc.Text()), " ", 2)
		if len(fields) != 2 || fields[0] != id {
			continue
		}
		pinned, _, _, _, err := ssh.ParseAuthorizedKey([]byte(fields[1]))
		if err != nil {
			return fmt.Errorf("pin host key: %s: bad line for %s: %w", k.path, id, err)
		}
		if bytes.Equal(pinned.Marshal(), offered) {
			return nil
		}
		return &HostKeyMismatchError{ID: id, Pinned: ssh.FingerprintSHA256(pinned),
			Offered: ssh.FingerprintSHA256(key), File: k.path}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("pin host key: read %s: %w", k.path, err)
	}
	line := id + " " + string(ssh.MarshalAuthorizedKey(key))
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("pin host key: %w", err)
	}
	return nil
}
