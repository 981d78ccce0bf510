package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
)

// Filter selects jobs by status, name pattern and submission time: `jobs
// retry` and `jobs cancel` take the same flags (--status, --name, --since).
type Filter struct {
	Statuses []lifecycle.Status `json:"statuses,omitempty"`
	// NameGlob is a shell pattern (* ? [...]) matched against the whole
	// job name, case sensitive.
	NameGlob string `json:"name,omitempty"`
	// Since keeps the jobs submitted at or after it; nil means any time.
	Since *time.Time `json:"since,omitempty"`
}

// Empty says whether f selects by nothing.
func (f Filter) Empty() bool { return len(f.Statuses) == 0 && f.NameGlob == "" && f.Since == nil }

// jobs lists the jobs f selects among those of the statuses allowed (the
// ended ones for a retry, the unfinished ones for a cancel), oldest first:
// f's statuses must each be one of them, and when f names none every
// allowed status is taken. which says what allowed is, for the error.
func (s *Service) filtered(ctx context.Context, f Filter, allowed []lifecycle.Status, which string) ([]*store.Job, error) {
	for _, st := range f.Statuses {
		if !slices.Contains(allowed, st) {
			return nil, &UsageError{Err: fmt.Errorf("--status: %q is not a status of %s (one of %s)", st, which, joinStatuses(allowed))}
		}
	}
	if err := store.ValidGlob(f.NameGlob); err != nil {
		return nil, &UsageError{Err: fmt.Errorf("--name: %q is not a valid pattern: %v", f.NameGlob, err)}
	}
	sf := store.JobFilter{Statuses: f.Statuses, NameGlob: f.NameGlob, Since: f.Since, Ascending: true, Owner: s.onlyOwn()}
	if len(sf.Statuses) == 0 {
		sf.Statuses = allowed
	}
	jobs, err := s.Store.Jobs(ctx, sf)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// ParseSince reads a --since value as docker's --since does: a duration
// back from now (90m, 24h, 2d), or a time (2026-11-30T15:04:05Z, with an
// offset or in UTC; 2026-11-30T15:04:05, 2026-11-30 15:04 and 2026-11-30
// in the local zone). "" means any time (nil).
func ParseSince(s string, now time.Time) (*time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if d, err := sinceDuration(s); err == nil {
		if d <= 0 {
			return nil, &UsageError{Err: fmt.Errorf("--since: %q must be a duration above 0 or a time", s)}
		}
		t := now.Add(-d)
		return &t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return &t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, now.Location()); err == nil {
			return &t, nil
		}
	}
	return nil, &UsageError{Err: fmt.Errorf("--since: %q is neither a duration (90m, 24h, 2d) nor a time (2026-11-30, 2026-11-30 15:04, 2026-11-30T15:04:05Z)", s)}
}

// sinceDuration is a Go duration, or a whole number of days ("2d").
func sinceDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100000 {
			return 0, errors.New("not a number of days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// keepsCluster says whether ended job id keeps its cluster, not yet asked
// to let it go: a cancel naming it releases the cluster.
func (s *Service) keepsCluster(ctx context.Context, id int64) bool {
	a, err := s.Store.KeptAttempt(ctx, id)
	return err == nil && a != nil && a.ReleaseRequested == "" && a.ReleasedAt == nil
}
