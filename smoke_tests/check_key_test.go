package smoke_tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sortie check makes sortie's SSH key when the home has none, and prints
// where it is and its public key; a second check shows the same key.
func TestCheckCreatesAndPrintsTheSSHKey(t *testing.T) {
	e := newEnv(t)
	key := filepath.Join(e.home, "keys", "id_ed25519")
	if _, err := os.Stat(key); err == nil {
		t.Fatalf("%s exists before any check", key)
	}
	line := regexp.MustCompile(`(?m)^  (ssh-ed25519 \S+)`)
	first := e.must("check").stdout
	if !strings.Contains(first, "ssh key: "+key+", created now;") {
		t.Errorf("first check does not say it made the key:\n%s", first)
	}
	m := line.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first check prints no public key:\n%s", first)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil || !strings.HasPrefix(string(pub), m[1]) {
		t.Errorf("%s.pub = %q, %v; want the printed key %q", key, pub, err, m[1])
	}
	second := e.must("check").stdout
	if strings.Contains(second, "created now") || !strings.Contains(second, "ssh key: "+key+";") || !strings.Contains(second, m[1]) {
		t.Errorf("second check, want the same key, not made again:\n%s", second)
	}
}
