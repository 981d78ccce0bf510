package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision"
)

func TestDefaultNodeDirRoot(t *testing.T) {
	for user, want := range map[string]string{"ubuntu": "/home/ubuntu/sortie", "sortie": "/home/sortie/sortie", "root": "/root/sortie"} {
		if got := DefaultNodeDirRoot(user); got != want {
			t.Errorf("DefaultNodeDirRoot(%q) = %q, want %q", user, got, want)
		}
	}
}

func TestOpen(t *testing.T) {
	home := t.TempDir()
	a, err := Open(home, Config{User: "ubuntu"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.NodeDir("i-123"); got != "/home/ubuntu/sortie/i-123" {
		t.Errorf("NodeDir with the default root = %q", got)
	}
	if !strings.HasPrefix(a.AuthorizedKey(), "ssh-ed25519 ") || a.PublicKey().Type() != "ssh-ed25519" {
		t.Errorf("key %q (%s), want sortie's ed25519 key", a.AuthorizedKey(), a.PublicKey().Type())
	}
	if _, err := os.Stat(filepath.Join(home, "keys")); err != nil {
		t.Errorf("the key was not written under home/keys: %v", err)
	}
	again, err := Open(home, Config{User: "root", NodeDirRoot: "/srv/nodes"})
	if err != nil {
		t.Fatal(err)
	}
	if again.AuthorizedKey() != a.AuthorizedKey() {
		t.Error("a second Open made a new key")
	}
	if got := again.NodeDir("i-9"); got != "/srv/nodes/i-9" {
		t.Errorf("NodeDir with a root set = %q", got)
	}
	if _, err := Open(home, Config{}); err == nil || !strings.Contains(err.Error(), "ssh_user") {
		t.Errorf("no user: %v, want an error naming ssh_user", err)
	}
}

func TestRunnerRank(t *testing.T) {
	a, err := Open(t.TempDir(), Config{User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	c := &provision.Cluster{Name: "c", Nodes: []provision.Node{{Rank: 0, InstanceID: "i-0"}}}
	asked := 0
	addr := func(context.Context, provision.Node) (string, error) {
		asked++
		return "", errors.New("no address yet")
	}
	for _, rank := range []int{-1, 1} {
		if _, err := a.Runner(context.Background(), c, rank, addr); err == nil || !strings.Contains(err.Error(), "no node of rank") {
			t.Errorf("rank %d: %v", rank, err)
		}
	}
	if _, err := a.Runner(context.Background(), nil, 0, addr); err == nil {
		t.Error("nil cluster: no error")
	}
	if asked != 0 {
		t.Errorf("looked up %d addresses for nodes that do not exist", asked)
	}
	if _, err := a.Runner(context.Background(), c, 0, addr); err == nil || !strings.Contains(err.Error(), "runner for c node 0: no address yet") {
		t.Errorf("address lookup failing: %v", err)
	}
}

func TestNilAccessForgetsAndClosesNothing(t *testing.T) {
	var a *Access
	a.Forget("sortie-1-0-1")
	if err := a.Close(); err != nil || a.OpenConnections() != 0 {
		t.Errorf("nil Access: Close = %v, %d open", err, a.OpenConnections())
	}
}
