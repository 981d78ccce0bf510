package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sortie/controller/store"
	"sortie/strategy"
)

// AdmitOptions is a store of many waiting jobs and the admission passes
// timed on it.
type AdmitOptions struct {
	Dir     string
	Waiting int // PENDING jobs waiting under the limit
	Users   int // owners they are spread across
	Runs    int // timed passes
}

// AdmitResult are the timings of each pass: Decide, the order and
// admission alone (strategy.Admit over the facts the store read), and
// Pass, the whole transaction (read, decide, write what changed).
type AdmitResult struct {
	Decide, Pass []time.Duration
}

// Admit fills a fresh store with o.Waiting PENDING jobs of o.Users owners
// (a tenth asking for 8 A100, priorities in seven steps) and 200 admitted
// ones holding the server's limit of 200 running jobs, with a day of past
// use per user; then times o.Runs admission passes, each of which admits
// nothing (the limit is full) and re-places every waiting job. Before each
// run one more job is submitted, at a priority that puts it amid the
// queue, so the places behind it move as they do in a live queue.
func Admit(ctx context.Context, o AdmitOptions) (AdmitResult, error) {
	var r AdmitResult
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return r, err
	}
	st, err := store.Open(ctx, filepath.Join(o.Dir, "state.db"), nil)
	if err != nil {
		return r, err
	}
	defer st.Close()
	submit := func(i int) (int64, error) {
		ask := strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 1}
		if i%10 == 0 {
			ask[strategy.GPU("A100")] = 8
		}
		return st.CreateJob(ctx, &store.Job{Name: fmt.Sprintf("j%d", i), Spec: []byte(`{}`), Owner: fmt.Sprintf("user%03d", i%o.Users),
			Priority: (i % 7) * 100, Ask: store.FormatAsk(ask)}, []store.NewTask{{}})
	}
	const running = 200
	limits := strategy.Limits{Server: strategy.Amounts{strategy.Jobs: running, strategy.GPU("A100"): 64},
		DefaultUser: strategy.Amounts{strategy.Jobs: 20}}
	halfLife := 24 * time.Hour
	var decideTook time.Duration
	decide := func(f store.AdmissionFacts) []strategy.Placed {
		start := time.Now()
		defer func() { decideTook = time.Since(start) }()
		return strategy.Admit(strategy.AdmitInput{Now: time.Now(), Waiting: f.Waiting, Held: f.Held, Limits: limits, Used: f.Used, HalfLife: halfLife})
	}
	// The running ones first: admitted while there is room.
	for i := range running {
		if _, err := submit(i*10 + 1); err != nil {
			return r, err
		}
	}
	if _, err := st.Admit(ctx, time.Now().Add(-strategy.UseWindow(halfLife)), decide); err != nil {
		return r, err
	}
	for i := range o.Waiting {
		if _, err := submit(i); err != nil {
			return r, err
		}
	}
	next := o.Waiting
	for range o.Runs {
		if _, err := submit(next); err != nil {
			return r, err
		}
		next++
		start := time.Now()
		if _, err := st.Admit(ctx, time.Now().Add(-strategy.UseWindow(halfLife)), decide); err != nil {
			return r, err
		}
		r.Pass = append(r.Pass, time.Since(start))
		r.Decide = append(r.Decide, decideTook)
	}
	return r, nil
}
