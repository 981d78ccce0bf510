package contract

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"90m", now.Add(-90 * time.Minute)},
		{"24h", now.Add(-24 * time.Hour)},
		{"2d", now.Add(-48 * time.Hour)},
		{"2026-11-29", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)},
		{"2026-11-29 15:04", time.Date(2026, 11, 29, 15, 4, 0, 0, time.UTC)},
		{"2026-11-29T15:04:05", time.Date(2026, 11, 29, 15, 4, 5, 0, time.UTC)},
		{"2026-11-29T15:04:05+02:00", time.Date(2026, 11, 29, 13, 4, 5, 0, time.UTC)},
	} {
		got, err := ParseSince(tc.in, now)
		if err != nil || got == nil || !got.Equal(tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
	if got, err := ParseSince("", now); got != nil || err != nil {
		t.Errorf(`"": %v %v, want any time`, got, err)
	}
	for _, in := range []string{"yesterday", "-5m", "0s", "2026-13-01", "3x"} {
		_, err := ParseSince(in, now)
		var usage *UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "--since: "+fmt.Sprintf("%q", in)) {
			t.Errorf("%q: %v, want a usage error naming --since and the value", in, err)
		}
	}
}
