package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/strategy"
)

// A job is stored with its priority (the task's, else 500, --priority
// over both) and what it holds while it runs.
func TestLaunchStoresPriorityAndAsk(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.yaml", "run: x\n")
	urgent := write("urgent.yaml", "priority: 900\nnum_nodes: 2\nresources: {cpus: 4}\nrun: x\n")
	low := 10
	for _, tc := range []struct {
		req      contract.LaunchRequest
		priority int
		ask      strategy.Amounts
	}{
		{contract.LaunchRequest{File: plain}, 500, strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 1}},
		{contract.LaunchRequest{File: urgent}, 900, strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 2, strategy.VCPUs: 8}},
		{contract.LaunchRequest{File: urgent, Priority: &low}, 10, strategy.Amounts{strategy.Jobs: 1, strategy.Nodes: 2, strategy.VCPUs: 8}},
	} {
		v, err := s.Launch(ctx, tc.req)
		if err != nil {
			t.Fatal(err)
		}
		j, err := s.Store.Job(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		ask, err := store.ParseAsk(j.Ask)
		if err != nil {
			t.Fatal(err)
		}
		if j.Priority != tc.priority || len(ask) != len(tc.ask) || ask[strategy.Nodes] != tc.ask[strategy.Nodes] || ask[strategy.VCPUs] != tc.ask[strategy.VCPUs] {
			t.Errorf("%s priority %v: stored priority %d ask %v, want %d %v", filepath.Base(tc.req.File), tc.req.Priority, j.Priority, ask, tc.priority, tc.ask)
		}
	}
	bad := 1001
	_, err := s.Launch(ctx, contract.LaunchRequest{File: plain, Priority: &bad})
	var ue *contract.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--priority: 1001 is not a priority") {
		t.Errorf("--priority 1001: %v, want a usage error naming --priority", err)
	}
}

// A job asking for more than a limit allows could never start: it is
// refused at launch, naming the limit, and nothing is stored.
func TestLaunchRefusedOverALimit(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	sixteen, four := 16, 4
	s.Config.Limits.Users = map[string]config.Limit{"alice": {GPUs: map[string]int{"A100": sixteen}}}
	s.Config.Limits.Server.Nodes = &four
	s.Asker = &contract.Asker{Name: "alice"}
	dir := t.TempDir()
	for _, tc := range []struct{ task, want string }{
		{"num_nodes: 4\nresources: {accelerators: A100:8}\nrun: x\n",
			"the job asks for 32 A100, more than the user limit of alice of 16 (limits in config.yaml): it could never start"},
		{"num_nodes: 5\nrun: x\n", "the job asks for 5 nodes, more than the server limit of 4"},
	} {
		p := filepath.Join(dir, "task.yaml")
		if err := os.WriteFile(p, []byte(tc.task), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := s.Launch(ctx, contract.LaunchRequest{File: p})
		var ue *contract.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a usage error saying %q", tc.task, err, tc.want)
		}
	}
	if jobs, _ := s.Store.Jobs(ctx, store.JobFilter{}); len(jobs) != 0 {
		t.Errorf("%d jobs stored, want none", len(jobs))
	}
	// Within the limits, it is stored.
	p := filepath.Join(dir, "ok.yaml")
	os.WriteFile(p, []byte("num_nodes: 2\nresources: {accelerators: A100:8}\nrun: x\n"), 0o644)
	if _, err := s.Launch(ctx, contract.LaunchRequest{File: p}); err != nil {
		t.Errorf("16 A100 on 2 nodes: %v", err)
	}
}
