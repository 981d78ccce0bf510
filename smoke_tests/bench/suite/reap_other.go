//go:build !linux

package suite

import (
	"errors"
	"time"
)

// Elsewhere than Linux no process adopts what another detaches; see
// reap_linux.go.

type orphans struct{}

func adoptOrphans() (*orphans, error)           { return nil, errors.ErrUnsupported }
func (o *orphans) finish(d time.Duration) error { return nil }
func childrenCPU() (time.Duration, error)       { return 0, errors.ErrUnsupported }
