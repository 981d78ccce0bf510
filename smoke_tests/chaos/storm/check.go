package storm

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // the database/sql driver "sqlite3"

	sortiehome "sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/strategy"
)

// Result is what a run did and what its checks found.
type Result struct {
	Cloud string
	Jobs  int
	// Kills counts SIGKILLs of the controller; Aimed those sent at a pause
	// point, Doubles the restarts of two controllers at once, Frozen the
	// SIGSTOPs, Preempts the nodes taken away with `sortie local preempt`.
	Kills, Aimed, Doubles, Frozen, Preempts int
	// The invariants: each counts what broke one.
	Lost       int // jobs not ended; attempts missing, or ended as lost without a lost node
	Duplicated int // attempt numbers repeated; two live attempts of a task; a node's task started twice
	Leaked     int // clusters, sim nodes or processes left at the end
	Mismatched int // exit codes, outcomes, decisions, counters or statuses other than the tasks chose
	Changed    int // a terminal status that changed
	OverLimit  int // samples of the store where more jobs held a place than Limit
	// Limit is limits.server.running_jobs (0: none); MostHeld the most
	// jobs seen holding a place at once; PriorityPreempts the attempts
	// that ended preempted_by_priority; RequeuedBetween the jobs asked to
	// yield between a restart's attempts (their kept cluster torn down).
	Limit, MostHeld, PriorityPreempts, RequeuedBetween int
	// DiskFull says how the full disk went: "" when not tried.
	DiskFull string
	// EndedWhileFull counts the nodes whose task ended while the disk was
	// full; UnknownWhileFull those of them whose code is recorded unknown
	// (each also counted lost).
	EndedWhileFull, UnknownWhileFull int
	// RefusedWhileFull counts launches refused for the full disk (each
	// launched again once it had room).
	RefusedWhileFull int
	Statuses         map[string]int
	// Problems describes the first broken invariants.
	Problems []string
}

// Line is the one-line summary `make chaos` prints.
func (r *Result) Line() string {
	s := fmt.Sprintf("%s: jobs %d, kills %d, lost %d, duplicated %d, leaked %d, mismatched %d, changed %d (aimed kills %d, double starts %d, sigstops %d, preempts %d",
		r.Cloud, r.Jobs, r.Kills, r.Lost, r.Duplicated, r.Leaked, r.Mismatched, r.Changed, r.Aimed, r.Doubles, r.Frozen, r.Preempts)
	if r.Limit > 0 {
		s += fmt.Sprintf(", preempts by priority %d, requeued between attempts %d, held at most %d of %d, over limit %d", r.PriorityPreempts, r.RequeuedBetween, r.MostHeld, r.Limit, r.OverLimit)
	}
	if r.DiskFull != "" {
		s += fmt.Sprintf(", disk full: %s, tasks ended while full %d, their codes unknown %d, launches refused while full %d", r.DiskFull, r.EndedWhileFull, r.UnknownWhileFull, r.RefusedWhileFull)
	}
	return s + ")"
}

// OK says whether every invariant held.
func (r *Result) OK() bool {
	return r.Lost+r.Duplicated+r.Leaked+r.Mismatched+r.Changed+r.OverLimit == 0
}

func (r *Result) problem(counter *int, format string, args ...any) {
	*counter++
	if len(r.Problems) < 40 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// openDB opens home's store for reading beside the controller.
func openDB(home string) (*sql.DB, error) {
	db, err := sql.Open("sqlite3", "file:"+sortiehome.State(home)+"?_busy_timeout=15000&_journal_mode=WAL")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// watcher samples the store while the storm runs: a terminal status seen
// once must never change, a task never has two live attempts, and with a
// limit no more jobs hold a place than it allows.
type watcher struct {
	db       *sql.DB
	limit    int
	mu       sync.Mutex
	terminal map[int64]string
	changed  []string
	twoLive  map[string]bool
	over     []string
	mostHeld int
	samples  int
}

func newWatcher(db *sql.DB, limit int) *watcher {
	return &watcher{db: db, limit: limit, terminal: map[int64]string{}, twoLive: map[string]bool{}}
}

func (w *watcher) run(ctx context.Context, every time.Duration) {
	for {
		w.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func (w *watcher) sample(ctx context.Context) {
	rows, err := w.db.QueryContext(ctx, `SELECT id, status FROM jobs`)
	if err != nil {
		return // busy or the disk full: the next sample sees it
	}
	seen := map[int64]string{}
	for rows.Next() {
		var id int64
		var st string
		if rows.Scan(&id, &st) == nil {
			seen[id] = st
		}
	}
	rows.Close()
	live := map[string]bool{}
	rows, err = w.db.QueryContext(ctx, `SELECT job_id, task_idx, COUNT(*) FROM attempts WHERE state <> 'ended' GROUP BY job_id, task_idx HAVING COUNT(*) > 1`)
	if err == nil {
		for rows.Next() {
			var id int64
			var idx, n int
			if rows.Scan(&id, &idx, &n) == nil {
				live[fmt.Sprintf("job %d task %d: %d live attempts at once", id, idx, n)] = true
			}
		}
		rows.Close()
	}
	held := -1
	if w.limit > 0 {
		// What admission counts as held: an active job that left PENDING
		// or was admitted (store.activeSQL), read in one statement.
		var active []string
		for _, st := range lifecycle.ActiveStatuses() {
			active = append(active, "'"+string(st)+"'")
		}
		if w.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE status IN (`+strings.Join(active, ", ")+`)
			AND (status <> 'PENDING' OR admitted_at IS NOT NULL)`).Scan(&held) != nil {
			held = -1
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	if held > w.mostHeld {
		w.mostHeld = held
	}
	if w.limit > 0 && held > w.limit {
		w.over = append(w.over, fmt.Sprintf("%d jobs held a place at once, over the server limit of %d (sample %d)", held, w.limit, w.samples))
	}
	for id, st := range seen {
		if was, ok := w.terminal[id]; ok && was != st {
			w.changed = append(w.changed, fmt.Sprintf("job %d: %s, then %s", id, was, st))
			w.terminal[id] = st
			continue
		}
		if lifecycle.Status(st).Terminal() {
			w.terminal[id] = st
		}
	}
	for k := range live {
		w.twoLive[k] = true
	}
}

// attempt is one attempt as the store has it.
type attempt struct {
	Attempt int
	Cluster string
	State   string
	Outcome string
	Codes   []*int
	Action  string
}

// job is one job as the store has it.
type job struct {
	ID                    int64
	Status                string
	Recoveries, Restarts  int
	Attempts              []attempt
	TaskRecov, TaskRestar int
}

// readJobs reads every job of a one-task pipeline with its attempts.
func readJobs(ctx context.Context, db *sql.DB) (map[int64]*job, error) {
	jobs := map[int64]*job{}
	rows, err := db.QueryContext(ctx, `SELECT j.id, j.status, t.recovery_count, t.restarts_on_errors FROM jobs j JOIN tasks t ON t.job_id = j.id AND t.idx = 0`)
	if err != nil {
		return nil, fmt.Errorf("read jobs: %w", err)
	}
	for rows.Next() {
		j := &job{}
		if err := rows.Scan(&j.ID, &j.Status, &j.TaskRecov, &j.TaskRestar); err != nil {
			rows.Close()
			return nil, err
		}
		jobs[j.ID] = j
	}
	rows.Close()
	rows, err = db.QueryContext(ctx, `SELECT job_id, attempt, cluster, state, COALESCE(outcome, ''), COALESCE(exit_codes, ''), action FROM attempts WHERE task_idx = 0 ORDER BY job_id, id`)
	if err != nil {
		return nil, fmt.Errorf("read attempts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var a attempt
		var codes string
		if err := rows.Scan(&id, &a.Attempt, &a.Cluster, &a.State, &a.Outcome, &codes, &a.Action); err != nil {
			return nil, err
		}
		if codes != "" {
			if err := json.Unmarshal([]byte(codes), &a.Codes); err != nil {
				return nil, fmt.Errorf("job %d attempt %d: exit codes %q: %w", id, a.Attempt, codes, err)
			}
		}
		if j := jobs[id]; j != nil {
			j.Attempts = append(j.Attempts, a)
		}
	}
	return jobs, rows.Err()
}

// checkCommon checks what holds for every run: each job ended, attempts
// numbered 1, 2, … without gaps or repeats, decisions, counters and the
// final status as the restart rule gives them for the outcomes recorded.
func (r *Result) checkCommon(jobs map[int64]*job, policy strategy.Policy) {
	r.Statuses = map[string]int{}
	for _, id := range slices.Sorted(maps.Keys(jobs)) {
		j := jobs[id]
		r.Statuses[j.Status]++
		if !lifecycle.Status(j.Status).Terminal() {
			r.problem(&r.Lost, "job %d: still %s", id, j.Status)
			continue
		}
		if len(j.Attempts) == 0 {
			r.problem(&r.Lost, "job %d: %s with no attempt", id, j.Status)
			continue
		}
		for i, a := range j.Attempts {
			if a.Attempt != i+1 {
				r.problem(&r.Duplicated, "job %d: attempt %d recorded as number %d (numbers %v)", id, i+1, a.Attempt, numbers(j.Attempts))
				break
			}
		}
		var c strategy.Counters
		var d strategy.Decision
		for i, a := range j.Attempts {
			if a.State != string(lifecycle.AttemptEnded) {
				r.problem(&r.Lost, "job %d %s: attempt %d still %s", id, j.Status, a.Attempt, a.State)
				break
			}
			d = strategy.Decide(policy, c, strategy.Ended{Outcome: strategy.Outcome(a.Outcome), ExitCodes: a.Codes}, true)
			if string(d.Action) != a.Action {
				r.problem(&r.Mismatched, "job %d attempt %d: %s %s decided %s, the rule says %s", id, a.Attempt, a.Outcome, fmtCodes(a.Codes), a.Action, d.Action)
			}
			c = d.Counters
			if d.Status.Terminal() && i != len(j.Attempts)-1 {
				r.problem(&r.Mismatched, "job %d: attempt %d after the decision %s", id, a.Attempt+1, d.Action)
				break
			}
		}
		if string(d.Status) != j.Status {
			r.problem(&r.Mismatched, "job %d: %s, the outcomes %s give %s", id, j.Status, outcomes(j.Attempts), d.Status)
		}
		if c.RecoveryCount != j.TaskRecov || c.RestartsOnErrors != j.TaskRestar {
			r.problem(&r.Mismatched, "job %d: counters recoveries %d restarts %d, the outcomes give %d and %d", id, j.TaskRecov, j.TaskRestar, c.RecoveryCount, c.RestartsOnErrors)
		}
	}
}

// checkWatched adds what the watcher saw.
func (r *Result) checkWatched(w *watcher) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.changed {
		r.problem(&r.Changed, "%s", s)
	}
	for _, k := range slices.Sorted(maps.Keys(w.twoLive)) {
		r.problem(&r.Duplicated, "%s", k)
	}
	for _, o := range w.over {
		r.problem(&r.OverLimit, "%s", o)
	}
	r.MostHeld = w.mostHeld
	if w.samples == 0 {
		r.problem(&r.Lost, "the store could not be sampled once during the run")
	}
}

func numbers(as []attempt) []int {
	var out []int
	for _, a := range as {
		out = append(out, a.Attempt)
	}
	return out
}

func outcomes(as []attempt) string {
	var s []string
	for _, a := range as {
		s = append(s, a.Outcome+" "+fmtCodes(a.Codes))
	}
	return strings.Join(s, ", ")
}

func fmtCodes(cs []*int) string {
	var s []string
	for _, c := range cs {
		if c == nil {
			s = append(s, "-")
		} else {
			s = append(s, fmt.Sprint(*c))
		}
	}
	return "[" + strings.Join(s, ",") + "]"
}

func sameCodes(a, b []*int) bool {
	return slices.EqualFunc(a, b, func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) })
}
