package service

import (
	"strings"
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// A refusal of inputs that failed after escalating says the size they
// failed at; one recorded before escalation existed (no size) reads as
// before.
func TestKnownFailureSaysTheSize(t *testing.T) {
	code := 137
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &store.KnownFailure{JobID: 12, Status: lifecycle.Failed, ExitCodes: []*int{&code}, RecordedAt: now.Add(-time.Hour),
		Size: &strategy.Size{Memory: "64"}}
	msg := (&KnownFailureError{Failure: f, Now: now}).Error()
	if !strings.Contains(msg, "failed in job 12 (exit code 137 at memory 64 GB, 1 hour ago)") {
		t.Errorf("message %q does not say the size", msg)
	}
	f.Size = nil
	msg = (&KnownFailureError{Failure: f, Now: now}).Error()
	if !strings.Contains(msg, "failed in job 12 (exit code 137, 1 hour ago)") {
		t.Errorf("message %q", msg)
	}
}
