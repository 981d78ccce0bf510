package cli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestEnvFileReadsOnlyARegularFile: --env-file /dev/zero would fill
// memory and a FIFO would block the launch forever.
func TestEnvFileReadsOnlyARegularFile(t *testing.T) {
	f, _, _ := testFactory()
	fifo := filepath.Join(t.TempDir(), "vars.env")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"/dev/zero", fifo} {
		_, err := launchRequest(f, &LaunchOptions{File: "t.yaml", EnvFile: file})
		if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--env-file: "+file+" is a") ||
			!strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("--env-file %s: %v; want a usage error saying it is not a regular file", file, err)
		}
	}
}
