//go:build !linux

package agent

import "errors"

// NotDumpable is Linux's; elsewhere the key is as safe as the user's other
// processes' memory.
func NotDumpable() error { return errors.ErrUnsupported }
