package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Several controllers (replicas) on one store share the unfinished jobs
// through leases: a job is driven by the replica that holds its lease, until
// the lease expires unless renewed. Every claim bumps the job's lease
// generation, and every write a replica makes for a job goes through a
// handle on the store bound to the lease it was given (Fenced), which
// checks, inside the write's own transaction, that the lease is still that
// one: a replica that was paused past its lease, whose job another replica
// has claimed since, can no longer change that job.
//
// Lease times are compared with the clock of the replica that asks, so
// the replicas' clocks must agree within a small part of the lease TTL.

// ErrLeaseLost is wrapped by the error of a write made through a handle
// fenced by a lease (Fenced) that the replica no longer holds.
var ErrLeaseLost = errors.New("the job's lease was lost to another replica")

// Replica is one running controller of a shared store.
type Replica struct {
	// ID is unique per start of the replica's process; it is what the
	// leases name.
	ID          string
	Name        string
	Host        string
	PID         int
	StartedAt   time.Time
	HeartbeatAt time.Time
	// TTL is how long its leases last unless renewed; it is live while
	// its last heartbeat is more recent than that.
	TTL time.Duration
	// Jobs is how many unfinished jobs the replica holds a lease on that
	// has not expired.
	Jobs int
}

// Lease is a replica's hold on one job: the generation its claim gave it.
type Lease struct {
	Job int64
	Gen int64
}

// Fence is what the writes of a replica for one job check: that the job
// of Lease is still held by Holder (the replica's id) at Lease's
// generation.
type Fence struct {
	Holder string
	Lease  Lease
}

// Fenced returns a handle on s whose every write transaction first checks
// f, and fails with ErrLeaseLost (changing nothing) when the replica no
// longer holds the lease. Reads are not checked. s itself is not changed.
func (s *Store) Fenced(f Fence) *Store {
	return &Store{conn: s.conn, fence: &f}
}

// Fence is the fence s checks, or nil for a store that checks none.
func (s *Store) Fence() *Fence { return s.fence }

// checkFence is the check Fenced asks for, made at the start of a write
// transaction. It is an UPDATE of the job's row, not a SELECT: on a
// database with row locks (PostgreSQL) the row stays locked until the
// transaction ends, so no claim can take the lease between the check and
// the commit; on SQLite the write transaction holds the whole database.
func (s *Store) checkFence(ctx context.Context, tx *dbTx) error {
	f := s.fence
	if f == nil {
		return nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_gen = lease_gen WHERE id = ? AND lease_holder = ? AND lease_gen = ?`,
		f.Lease.Job, f.Holder, f.Lease.Gen)
	if err != nil {
		return fmt.Errorf("check the lease of job %d: %w", f.Lease.Job, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		if err != nil {
			return fmt.Errorf("check the lease of job %d: %w", f.Lease.Job, err)
		}
		return fmt.Errorf("job %d (lease %d): %w", f.Lease.Job, f.Lease.Gen, ErrLeaseLost)
	}
	return nil
}

func millis(t time.Time) int64 { return t.UnixMilli() }

// liveSQL selects the replicas live at the time given as its parameter.
const liveSQL = "heartbeat_at + lease_ttl >= ?"

// ErrReplicaRunning is wrapped by RegisterReplica's error when a live
// replica already has the name.
var ErrReplicaRunning = errors.New("a replica of that name is running")

// RegisterReplica records r (its ID, Name, Host, PID, TTL) as a running
// replica with a heartbeat now. A replica of the same name whose heartbeat
// is older than its TTL is dead and its row goes (its leases expire on
// their own); a live one makes it fail with ErrReplicaRunning: two
// processes under one name would be impossible to tell apart.
func (s *Store) RegisterReplica(ctx context.Context, r Replica) error {
	now := s.now()
	return s.tx(ctx, func(tx *dbTx) error {
		var host string
		var pid int
		var hb, ttl int64
		err := tx.QueryRowContext(ctx, `SELECT host, pid, heartbeat_at, lease_ttl FROM replicas WHERE name = ? AND `+liveSQL+` ORDER BY heartbeat_at DESC LIMIT 1`,
			r.Name, millis(now)).Scan(&host, &pid, &hb, &ttl)
		if err == nil {
			age := now.Sub(time.UnixMilli(hb)).Round(time.Millisecond)
			return fmt.Errorf("%w: replica %q is pid %d on %s, its heartbeat %s ago; give each replica its own name, or wait %s for a dead one's heartbeat to age out",
				ErrReplicaRunning, r.Name, pid, host, age, time.Duration(ttl)*time.Millisecond)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM replicas WHERE name = ?`, r.Name); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO replicas (id, name, host, pid, started_at, heartbeat_at, lease_ttl) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Name, r.Host, r.PID, fmtTime(now), millis(now), r.TTL.Milliseconds())
		return err
	})
}

// ClaimJobs gives replica the leases of at most n unfinished jobs whose
// lease is free or expired, lowest ids first, until now+ttl, and returns
// them. It is one UPDATE. On PostgreSQL the rows it picks are locked and
// those another transaction holds (a claim, a write under a lease) are
// skipped; the condition is repeated outside the subquery all the same,
// so that a row a concurrent claim changed is read again, never taken
// twice.
func (s *Store) ClaimJobs(ctx context.Context, replica string, n int, ttl time.Duration) ([]Lease, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []Lease
	err := s.tx(ctx, func(tx *dbTx) error {
		now := millis(s.now())
		var err error
		out, err = queryAll(ctx, tx, scanLease, `UPDATE jobs SET lease_holder = ?, lease_gen = lease_gen + 1, lease_expires = ?
			WHERE id IN (SELECT id FROM jobs WHERE `+activeSQL+` AND (lease_holder IS NULL OR lease_expires < ?) ORDER BY id LIMIT ?`+s.d.skipLocked()+`)
				AND (lease_holder IS NULL OR lease_expires < ?)
			RETURNING id, lease_gen`, replica, now+ttl.Milliseconds(), now, n, now)
		return err
	})
	return out, err
}

// RenewLeases extends every lease replica holds on an unfinished job to
// now+ttl, beats its heartbeat, and returns the leases it still holds: a
// job missing from them was claimed by another replica (its lease had
// expired), and the replica must stop driving it at once. Leases that
// expired but that no other replica claimed are renewed: nobody else
// drove those jobs meanwhile.
func (s *Store) RenewLeases(ctx context.Context, replica string, ttl time.Duration) ([]Lease, error) {
	var out []Lease
	err := s.tx(ctx, func(tx *dbTx) error {
		now := millis(s.now())
		if _, err := tx.ExecContext(ctx, `UPDATE replicas SET heartbeat_at = ? WHERE id = ?`, now, replica); err != nil {
			return err
		}
		var err error
		out, err = queryAll(ctx, tx, scanLease, `UPDATE jobs SET lease_expires = ? WHERE lease_holder = ? AND `+activeSQL+`
			RETURNING id, lease_gen`, now+ttl.Milliseconds(), replica)
		return err
	})
	return out, err
}

func scanLease(rows *sql.Rows) (l Lease, err error) {
	err = rows.Scan(&l.Job, &l.Gen)
	return
}

// ReleaseLeases gives up every lease replica holds and removes its row: a
// replica stopping on purpose lets the others claim its jobs at once,
// rather than after the TTL.
func (s *Store) ReleaseLeases(ctx context.Context, replica string) error {
	return s.tx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET lease_holder = NULL, lease_expires = 0 WHERE lease_holder = ?`, replica); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM replicas WHERE id = ?`, replica)
		return err
	})
}

// LeaseLoad is what a replica weighs before claiming: the unfinished jobs,
// those whose lease is free or expired, those the replica holds, and the
// replicas alive (a heartbeat within their TTL).
type LeaseLoad struct {
	Active, Claimable, Held, Live int
}

// LeaseLoad counts, at the store's now, what a claim by replica weighs.
func (s *Store) LeaseLoad(ctx context.Context, replica string) (LeaseLoad, error) {
	now := s.now()
	var l LeaseLoad
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(CASE WHEN lease_holder IS NULL OR lease_expires < ? THEN 1 ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN lease_holder = ? THEN 1 ELSE 0 END), 0)
		FROM jobs WHERE `+activeSQL, millis(now), replica).Scan(&l.Active, &l.Claimable, &l.Held)
	if err != nil {
		return l, err
	}
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM replicas WHERE `+liveSQL, millis(now)).Scan(&l.Live)
	return l, err
}

// Replicas lists the replicas, newest heartbeat first, each with the
// number of unfinished jobs whose lease it holds at now.
func (s *Store) Replicas(ctx context.Context) ([]Replica, error) {
	now := millis(s.now())
	return queryAll(ctx, s.db, scanReplica, `SELECT r.id, r.name, r.host, r.pid, r.started_at, r.heartbeat_at, r.lease_ttl,
			(SELECT COUNT(*) FROM jobs j WHERE j.lease_holder = r.id AND j.lease_expires >= ? AND j.`+activeSQL+`)
		FROM replicas r ORDER BY r.heartbeat_at DESC, r.name`, now)
}

func scanReplica(rows *sql.Rows) (Replica, error) {
	var r Replica
	var started sql.NullString
	var hb, ttl int64
	if err := rows.Scan(&r.ID, &r.Name, &r.Host, &r.PID, &started, &hb, &ttl, &r.Jobs); err != nil {
		return Replica{}, err
	}
	if t := parseTime(started); t != nil {
		r.StartedAt = *t
	}
	r.HeartbeatAt = time.UnixMilli(hb).UTC()
	r.TTL = time.Duration(ttl) * time.Millisecond
	return r, nil
}

// LiveReplicas names the replicas whose heartbeat is within their TTL.
func (s *Store) LiveReplicas(ctx context.Context) ([]string, error) {
	return queryAll(ctx, s.db, column[string], `SELECT name FROM replicas WHERE `+liveSQL+` ORDER BY name`, millis(s.now()))
}

// HeldJobsShard returns the unfinished jobs of one shard (as
// ActiveJobsShard) whose lease replica holds.
func (s *Store) HeldJobsShard(ctx context.Context, replica string, shards, shard int) ([]*Job, error) {
	if shards <= 1 {
		return findJobs(ctx, s.db, `WHERE `+activeSQL+` AND lease_holder = ? ORDER BY id`, replica)
	}
	return findJobs(ctx, s.db, `WHERE `+activeSQL+` AND lease_holder = ? AND id % ? = ? ORDER BY id`, replica, shards, shard)
}

// HeldOpenAttemptsShard returns the attempts that have not ended of the
// jobs of one shard (as OpenAttemptsShard) whose lease replica holds.
func (s *Store) HeldOpenAttemptsShard(ctx context.Context, replica string, shards, shard int) ([]*Attempt, error) {
	held := ` AND job_id IN (SELECT id FROM jobs WHERE lease_holder = ?)`
	if shards <= 1 {
		return findAttempts(ctx, s.db, `WHERE `+openSQL+held+` ORDER BY id`, replica)
	}
	return findAttempts(ctx, s.db, `WHERE `+openSQL+held+` AND job_id % ? = ? ORDER BY id`, replica, shards, shard)
}

// skipLocked is the clause that makes a SELECT lock the rows it picks and
// pass over those locked by another transaction, where the database has
// row locks (PostgreSQL); SQLite's write transaction holds the whole
// store.
func (d *dialect) skipLocked() string {
	if d.postgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}
