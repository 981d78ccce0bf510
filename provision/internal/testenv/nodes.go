package testenv

import (
	"path/filepath"

	"golang.org/x/crypto/ssh"
)

// StartNodeSSHD starts the private sshd that stands in for every VM of a
// cloud test and lets in the key of the sortie home (loadKey is
// sshrun.LoadOrCreateKey, passed in because sshrun's own tests use this
// package). When the test ends it kills the task processes left in the
// node directories under nodes, as the cloud would by deleting the VMs.
func StartNodeSSHD(t TB, home, nodes string, loadKey func(dir string) (ssh.Signer, string, error)) *SSHD {
	t.Helper()
	_, line, err := loadKey(filepath.Join(home, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	s := StartSSHD(t)
	s.Authorize(t, line)
	t.Cleanup(func() { KillNodeProcessesUnder(nodes) })
	return s
}
