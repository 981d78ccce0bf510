package service

import (
	"testing"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
)

// A job being stopped for a job of higher priority names it in its view
// (preempted_for) until it ends; one not asked names nothing.
func TestViewPreemptedFor(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	by := int64(14)
	for _, tc := range []struct {
		status lifecycle.Status
		yield  *int64
		want   *int64
	}{
		{lifecycle.Running, &by, &by},
		{lifecycle.Running, nil, nil},
		{lifecycle.Succeeded, &by, nil},
	} {
		v := viewJob(&store.Job{ID: 9, Status: tc.status, YieldFor: tc.yield, SubmittedAt: now}, now)
		if (v.PreemptedFor == nil) != (tc.want == nil) || (v.PreemptedFor != nil && *v.PreemptedFor != *tc.want) {
			t.Errorf("%s, yield_for %v: preempted_for %v, want %v", tc.status, tc.yield, v.PreemptedFor, tc.want)
		}
	}
}
