package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// cancelService is a service whose store's clock the test moves: job i
// (from 0) is submitted at base + i minutes.
func cancelService(t *testing.T, names ...string) (*Service, []int64, time.Time) {
	t.Helper()
	ctx := context.Background()
	s := testService(t)
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	now := base
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "state.db"), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s.Store = st
	var ids []int64
	for i, n := range names {
		now = base.Add(time.Duration(i) * time.Minute)
		id, err := st.CreateJob(ctx, &store.Job{Name: n, Spec: []byte("{}"), NumTasks: 1}, []store.NewTask{{}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	s.Now = func() time.Time { return base.Add(time.Hour) }
	return s, ids, base
}

func viewIDs(vs []contract.JobView) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

func TestCancelTargetsByFilter(t *testing.T) {
	ctx := context.Background()
	s, ids, base := cancelService(t, "sweep-1", "sweep-2", "train", "sweep-3", "sweep-4")
	// sweep-3 has ended; sweep-4 is already being cancelled.
	if err := s.Store.FinishJob(ctx, ids[3], strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Rule: strategy.RuleCancelled, Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.RequestCancel(ctx, ids[4:5]); err != nil {
		t.Fatal(err)
	}
	at := func(min int) *time.Time { t := base.Add(time.Duration(min) * time.Minute); return &t }
	for _, tc := range []struct {
		name string
		req  contract.CancelRequest
		want []int64
	}{
		{"glob", contract.CancelRequest{Filter: contract.Filter{NameGlob: "sweep-*"}}, []int64{ids[0], ids[1], ids[4]}},
		{"glob and status", contract.CancelRequest{Filter: contract.Filter{NameGlob: "sweep-*", Statuses: []lifecycle.Status{lifecycle.Pending}}}, ids[:2]},
		{"since", contract.CancelRequest{Filter: contract.Filter{Since: at(1)}}, []int64{ids[1], ids[2], ids[4]}},
		{"glob and since", contract.CancelRequest{Filter: contract.Filter{NameGlob: "sweep-*", Since: at(1)}}, []int64{ids[1], ids[4]}},
		{"all", contract.CancelRequest{All: true}, []int64{ids[0], ids[1], ids[2], ids[4]}},
		{"ids leave ended jobs out", contract.CancelRequest{IDs: []int64{ids[3], ids[2]}}, []int64{ids[2]}},
		{"a name matched whole", contract.CancelRequest{Filter: contract.Filter{NameGlob: "sweep"}}, []int64{}},
	} {
		got, err := s.CancelTargets(ctx, tc.req)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(viewIDs(got), tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, viewIDs(got), tc.want)
		}
	}
	for _, tc := range []struct {
		req  contract.CancelRequest
		want string
	}{
		{contract.CancelRequest{Filter: contract.Filter{Statuses: []lifecycle.Status{lifecycle.Failed}}}, `--status: "FAILED" is not a status of an unfinished job (one of PENDING, STARTING, RUNNING, RECOVERING, CANCELLING)`},
		{contract.CancelRequest{Filter: contract.Filter{NameGlob: "sweep-["}}, `--name: "sweep-[" is not a valid pattern`},
		{contract.CancelRequest{}, "name the jobs to cancel in one way"},
		{contract.CancelRequest{All: true, Filter: contract.Filter{NameGlob: "x"}}, "name the jobs to cancel in one way"},
		{contract.CancelRequest{IDs: []int64{99}}, "job 99: no such job"},
	} {
		_, err := s.CancelTargets(ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
	var usage *contract.UsageError
	if _, err := s.CancelTargets(ctx, contract.CancelRequest{}); !errors.As(err, &usage) {
		t.Errorf("a request naming nothing: %v, want a usage error", err)
	}
}

// Thousands of jobs are marked in batches, every one of them.
func TestCancelMarksEveryJobInBatches(t *testing.T) {
	ctx := context.Background()
	names := make([]string, 2*cancelBatch+17)
	for i := range names {
		names[i] = fmt.Sprintf("sweep-%d", i)
	}
	s, ids, _ := cancelService(t, names...)
	woken := 0
	s.StartDaemon = func(context.Context, string) error { woken++; return nil }
	var txs int
	s.Store.ObserveTx(func(time.Duration) { txs++ })
	marked, err := s.Cancel(ctx, contract.CancelRequest{Filter: contract.Filter{NameGlob: "sweep-*"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(marked, ids) {
		t.Errorf("marked %d jobs, want all %d in order", len(marked), len(ids))
	}
	if txs != 3 {
		t.Errorf("%d write transactions, want 3 (batches of %d)", txs, cancelBatch)
	}
	if woken != 1 {
		t.Errorf("the controller was woken %d times, want once", woken)
	}
	jobs, _ := s.Store.Jobs(ctx, store.JobFilter{Statuses: []lifecycle.Status{lifecycle.Cancelling}})
	if len(jobs) != len(ids) {
		t.Errorf("%d jobs CANCELLING, want %d", len(jobs), len(ids))
	}
}
