//go:build !linux

package agent

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// Elsewhere than Linux the agent reaps only its phases; see reap_linux.go.
// Subreaper fails, so Reap is off and nothing below is called.

func Subreaper(on bool) error { return errors.ErrUnsupported }
func startChild(cmd *exec.Cmd) (int, <-chan int, error) {
	return 0, nil, errors.ErrUnsupported
}
func signalChild(pid int, sig syscall.Signal) {}
func endLeftovers(grace time.Duration) bool   { return false }
