package controller

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/config"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// The sweep removes the kept logs of jobs that ended more than
// log_retention ago, by the controller's clock, records when and why, and
// leaves younger jobs' logs and every record alone.
func TestSweepRemovesLogsPastRetention(t *testing.T) {
	ctx := context.Background()
	h := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st, err := store.Open(ctx, filepath.Join(h, "state.db"), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	end := func(name string) int64 {
		id, err := st.CreateJob(ctx, &store.Job{Name: name, Spec: []byte(`{}`)}, []store.NewTask{{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.RequestCancel(ctx, []int64{id}); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishJob(ctx, id, strategy.Decision{Action: strategy.Cancel, Status: lifecycle.Cancelled, Reason: "cancelled"}); err != nil {
			t.Fatal(err)
		}
		log := home.NodeLog(h, id, 0, 1, 0)
		if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(log, []byte("output\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return id
	}
	old := end("old")
	now = now.Add(20 * 24 * time.Hour)
	young := end("young")
	live, _ := st.CreateJob(ctx, &store.Job{Name: "live", Spec: []byte(`{}`)}, []store.NewTask{{Name: "live"}})

	cfg := config.Config{Home: h}
	cfg.Controller.LogRetention = config.Duration(30 * 24 * time.Hour)
	c := New(st, cfg, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.Now = func() time.Time { return now.Add(11 * 24 * time.Hour) } // old ended 31 days ago, young 11
	if err := c.RemoveExpiredLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(home.JobLogDir(h, old)); !os.IsNotExist(err) {
		t.Errorf("the old job's logs are still there: %v", err)
	}
	if _, err := os.Stat(home.NodeLog(h, young, 0, 1, 0)); err != nil {
		t.Errorf("the young job's log is gone: %v", err)
	}
	at, why, _ := st.LogsRemoved(ctx, old)
	if at == nil || !at.Equal(c.Now()) || !strings.Contains(why, "controller.log_retention (30d)") {
		t.Errorf("removal recorded at %v: %q", at, why)
	}
	for _, id := range []int64{young, live} {
		if at, _, _ := st.LogsRemoved(ctx, id); at != nil {
			t.Errorf("job %d: recorded removed", id)
		}
	}
	if j, err := st.Job(ctx, old); err != nil || j.Status != lifecycle.Cancelled {
		t.Errorf("the job itself: %+v %v", j, err)
	}
	// A later sweep finds nothing more to do.
	if ids, _ := st.JobsWithLogsEndedBefore(ctx, c.Now().Add(-30*24*time.Hour), 10); len(ids) != 0 {
		t.Errorf("still past retention: %v", ids)
	}
}
