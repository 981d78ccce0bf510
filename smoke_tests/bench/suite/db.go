package suite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	sortiehome "sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/service"
)

// openDB opens home's store for the bench's own queries, beside the
// controller that writes it.
func openDB(dir string) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", "file:"+sortiehome.State(dir)+"?_busy_timeout=15000&_journal_mode=WAL")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", sortiehome.State(dir), err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// statusCounts counts the jobs of each status.
func statusCounts(ctx context.Context, db *sql.DB) (map[string]int, error) {
	rows, err := db.QueryContext(ctx, `SELECT status, COUNT(*) FROM jobs GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}

// latest is the latest of a job time column (started_at, ended_at), and
// how many jobs have it set.
func latest(ctx context.Context, db *sql.DB, column string) (time.Time, int, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+column+` FROM jobs WHERE `+column+` IS NOT NULL`)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("read %s: %w", column, err)
	}
	defer rows.Close()
	var max time.Time
	n := 0
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return max, n, err
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return max, n, fmt.Errorf("jobs.%s %q: %w", column, s, err)
		}
		n++
		if t.After(max) {
			max = t
		}
	}
	return max, n, rows.Err()
}

// submit stores n jobs of the task file through the same service the CLI
// uses, in this process, nudging the controller every batch jobs, and
// returns their ids and when the last was stored.
func submit(ctx context.Context, d *Daemon, file string, n, batch int, progress io.Writer) ([]int64, time.Time, error) {
	return submitNamed(ctx, d, file, "bench", n, batch, progress)
}

// submitNamed is submit with the jobs named prefix-0, prefix-1, ...
func submitNamed(ctx context.Context, d *Daemon, file, prefix string, n, batch int, progress io.Writer) ([]int64, time.Time, error) {
	svc, err := service.Open(ctx, d.Home, clouds.Light())
	if err != nil {
		return nil, time.Time{}, err
	}
	defer svc.Close()
	// The controller already runs; it is told of new jobs by a nudge, as
	// the CLI's launch tells it.
	svc.StartDaemon = func(context.Context, string) error { return nil }
	svc.FindDaemon = nil
	ids := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		j, err := svc.Launch(ctx, contract.LaunchRequest{File: file, Name: fmt.Sprintf("%s-%d", prefix, i)})
		if err != nil {
			return ids, time.Time{}, fmt.Errorf("submit job %d of %d: %w", i+1, n, err)
		}
		ids = append(ids, j.ID)
		if (i+1)%batch == 0 {
			d.Nudge()
			fmt.Fprintf(progress, "submitted %d/%d\n", i+1, n)
		}
	}
	last := time.Now()
	d.Nudge()
	return ids, last, nil
}

// waitAll polls the store every poll until every job has ended or timeout
// passes, printing the counts to progress every report.
func waitAll(ctx context.Context, db *sql.DB, n int, poll, timeout, report time.Duration, progress io.Writer) (map[string]int, error) {
	var counts map[string]int
	ended := 0
	next := time.Now()
	err := until(ctx, poll, timeout, func() (bool, error) {
		var err error
		if counts, err = statusCounts(ctx, db); err != nil {
			return false, err
		}
		ended = 0
		for _, st := range lifecycle.TerminalStatuses() {
			ended += counts[string(st)]
		}
		if ended < n && time.Now().After(next) {
			fmt.Fprintf(progress, "  %v\n", counts)
			next = time.Now().Add(report)
		}
		return ended >= n, nil
	}, func() error { return fmt.Errorf("%d of %d jobs ended within %s: %v", ended, n, timeout, counts) })
	return counts, err
}

// until calls check every poll until it says done or fails, ctx ends, or
// timeout passes: then it returns the error late makes.
func until(ctx context.Context, poll, timeout time.Duration, check func() (bool, error), late func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		if done, err := check(); done || err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return late()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// home is a controller's SORTIE_HOME set up for one benchmark group: its
// config, the task file it submits, the running daemon and its store.
type home struct {
	daemon *Daemon
	db     *sql.DB
	task   string
}

// openHome writes config and task into dir, starts the daemon of bin on it
// and opens its store.
func openHome(ctx context.Context, bin, dir, config, task string) (*home, error) {
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o644); err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "work", "task.yaml")
	if err := os.WriteFile(file, []byte(task), 0o644); err != nil {
		return nil, err
	}
	d, err := StartDaemon(ctx, bin, dir)
	if err != nil {
		return nil, err
	}
	db, err := openDB(dir)
	if err != nil {
		d.Kill()
		return nil, err
	}
	return &home{daemon: d, db: db, task: file}, nil
}

// Close closes the store and kills the daemon.
func (h *home) Close() {
	h.db.Close()
	h.daemon.Kill()
}
