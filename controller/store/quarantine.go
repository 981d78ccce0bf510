package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"sortie/strategy"
)

// PlacementFailures returns the ended attempts since since whose outcome
// may count against where they ran (strategy.CountsAgainstPlacement), and
// those whose failure a confirmation found flaky (marked Flaky), with their
// task's input key and, for a failed setup, the first non-zero exit code.
// Attempts that never got a placement are left out.
func (s *Store) PlacementFailures(ctx context.Context, since time.Time) ([]strategy.PlacementFailure, error) {
	// Times are stored as RFC 3339 text, which sorts by time but for
	// fractions of a second; a second earlier leaves none out, and
	// strategy.Quarantine looks at each time itself. The outcomes are
	// written out, not bound, so that the partial index
	// attempts_placement_failures (0017) is seen to cover the query.
	// A flaky failure counts from when the failed attempt ended, as the
	// others do; the confirmations are few and reached by their key.
	from := fmtTime(since.Add(-time.Second))
	return queryAll(ctx, s.db, scanPlacementFailure, `SELECT a.job_id, a.cloud, a.region, a.zone, a.instance_type, a.host, a.outcome, a.exit_codes, a.ended_at, t.input_key, 0 AS flaky, a.id
		FROM attempts a JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.task_idx
		WHERE a.outcome IN ('node_lost', 'setup_failure') AND a.ended_at >= ? AND a.cloud <> ''
		UNION ALL
		SELECT a.job_id, a.cloud, a.region, a.zone, a.instance_type, a.host, a.outcome, a.exit_codes, a.ended_at, c.input_key, 1 AS flaky, a.id
		FROM confirmations c JOIN attempts a ON a.job_id = c.job_id AND a.task_idx = c.task_idx AND a.attempt = c.attempt
		WHERE c.verdict = 'flaky' AND a.ended_at >= ? AND a.cloud <> ''
		ORDER BY 9, 12`, from, from)
}

func scanPlacementFailure(rows *sql.Rows) (strategy.PlacementFailure, error) {
	var f strategy.PlacementFailure
	var codes, ended, key sql.NullString
	var flaky int
	var id int64
	if err := rows.Scan(&f.JobID, &f.Placement.Cloud, &f.Placement.Region, &f.Placement.Zone, &f.InstanceType, &f.Host, &f.Outcome, &codes, &ended, &key, &flaky, &id); err != nil {
		return f, err
	}
	f.Flaky = flaky != 0
	if at := parseTime(ended); at != nil {
		f.At = *at
	}
	f.InputKey = key.String
	if f.Outcome == strategy.SetupFailure && codes.Valid {
		var cs []*int
		if json.Unmarshal([]byte(codes.String), &cs) == nil {
			for _, c := range cs {
				if c != nil && *c != 0 {
					f.ExitCode = c
					break
				}
			}
		}
	}
	return f, nil
}

// QuarantineClear is a user's clear of a zone, an instance type in a zone
// or a Kubernetes node: failures there up to At no longer count.
type QuarantineClear struct {
	Key strategy.QuarantineKey
	At  time.Time
	By  string
}

// ClearQuarantine records that by cleared k now: the failures there so far
// no longer count against it. The cloud's name is stored lower-case.
func (s *Store) ClearQuarantine(ctx context.Context, k strategy.QuarantineKey, by string) (time.Time, error) {
	k = k.Normal()
	now := s.now()
	p := k.Placement
	_, err := s.db.ExecContext(ctx, `INSERT INTO quarantine_clears (cloud, region, zone, instance_type, host, cleared_at, cleared_by) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(cloud, region, zone, instance_type, host) DO UPDATE SET cleared_at = excluded.cleared_at, cleared_by = excluded.cleared_by`,
		p.Cloud, p.Region, p.Zone, k.InstanceType, k.Host, fmtTime(now), by)
	if err != nil {
		return now, fmt.Errorf("clear the quarantine of %s: %w", k, err)
	}
	return now, nil
}

// QuarantineClears returns every key's last clear.
func (s *Store) QuarantineClears(ctx context.Context) ([]QuarantineClear, error) {
	return queryAll(ctx, s.db, func(rows *sql.Rows) (QuarantineClear, error) {
		var c QuarantineClear
		var at sql.NullString
		p := &c.Key.Placement
		if err := rows.Scan(&p.Cloud, &p.Region, &p.Zone, &c.Key.InstanceType, &c.Key.Host, &at, &c.By); err != nil {
			return c, err
		}
		if t := parseTime(at); t != nil {
			c.At = *t
		}
		return c, nil
	}, `SELECT cloud, region, zone, instance_type, host, cleared_at, cleared_by FROM quarantine_clears ORDER BY cloud, region, zone, instance_type, host`)
}

// Quarantined returns what is quarantined under p now, from the failures
// of the last p.Window() and the users' clears: what every replica on this
// store computes alike.
func (s *Store) Quarantined(ctx context.Context, p strategy.QuarantinePolicy) ([]strategy.Quarantined, error) {
	if p.Threshold <= 0 || p.HalfLife <= 0 {
		return nil, nil
	}
	now := s.now()
	fs, err := s.PlacementFailures(ctx, now.Add(-p.Window()))
	if err != nil {
		return nil, fmt.Errorf("read the failures by placement: %w", err)
	}
	if len(fs) < p.Threshold {
		return nil, nil
	}
	clears, err := s.QuarantineClears(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the quarantine clears: %w", err)
	}
	byKey := map[strategy.QuarantineKey]time.Time{}
	for _, c := range clears {
		byKey[c.Key] = c.At
	}
	return strategy.Quarantine(p, fs, func(k strategy.QuarantineKey) time.Time { return byKey[k] }, now), nil
}

// Preemptions returns the attempts the cloud took away that ended at or
// after since, where each ran and when it ended, oldest first: the history
// strategy.PreemptionWeights decays. Attempts that never got a placement
// are left out.
func (s *Store) Preemptions(ctx context.Context, since time.Time) ([]strategy.Preemption, error) {
	// A second earlier, as PlacementFailures does: stored times sort as
	// text but for fractions of a second. The outcome is written out so
	// that the partial index attempts_preemptions (0020) covers the query.
	return queryAll(ctx, s.db, func(rows *sql.Rows) (strategy.Preemption, error) {
		var p strategy.Preemption
		var ended sql.NullString
		if err := rows.Scan(&p.Placement.Cloud, &p.Placement.Region, &p.Placement.Zone, &ended); err != nil {
			return p, err
		}
		if at := parseTime(ended); at != nil {
			p.At = *at
		}
		return p, nil
	}, `SELECT cloud, region, zone, ended_at FROM attempts
		WHERE outcome = 'preempted' AND ended_at >= ? AND cloud <> '' ORDER BY ended_at, id`, fmtTime(since.Add(-time.Second)))
}
