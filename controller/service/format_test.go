package service

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0 seconds"},
		{0, "0 seconds"},
		{time.Second, "1 second"},
		{59 * time.Second, "59 seconds"},
		{time.Minute, "1 minute"},
		{90 * time.Minute, "1 hour"},
		{47 * time.Hour, "47 hours"},
		{48 * time.Hour, "2 days"},
	} {
		if got := Age(tc.d); got != tc.want {
			t.Errorf("Age(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
