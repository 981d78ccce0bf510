//go:build !linux

package agent

import (
	"errors"
	"time"
)

// Elsewhere than Linux the agent reaps only its phases; see reap_linux.go.

func becomeSubreaper() error                { return errors.ErrUnsupported }
func waitReaping(pid int) int               { return 1 }
func endLeftovers(grace time.Duration) bool { return false }
