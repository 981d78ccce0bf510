package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/schema"
)

// A retry from the failed task links each task that succeeded before it
// to the run it reuses: a task that was itself linked passes its link on,
// so no link points at a link. A --set that changes a linked task is
// refused, naming it; one that changes only the tasks that run is not.
func TestFailedTaskLinks(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	p, err := schema.Parse([]byte("name: p\n---\nname: prep\nrun: a\n---\nname: train\nrun: b\n---\nrun: c\n"), clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := p.Marshal()
	first, err := s.Store.CreateJob(ctx, &store.Job{Name: "p", Spec: spec}, []store.NewTask{{Name: "prep"}, {Name: "train"}, {}})
	if err != nil {
		t.Fatal(err)
	}
	// A retry of first that linked its task 0, and is now the one retried.
	second, err := s.Store.CreateJob(ctx, &store.Job{Name: "p", Spec: spec},
		[]store.NewTask{{Name: "prep", Linked: &store.TaskRef{Job: first, Task: 0}}, {Name: "train"}, {}})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := s.Store.Job(ctx, second)

	links, err := s.failedTaskLinks(ctx, j, p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]store.TaskRef{{Job: first, Task: 0}}, links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}

	changedRun, _, err := schema.ApplySet(p, []string{"tasks[1].envs.A=1"}, clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.failedTaskLinks(ctx, j, changedRun); err != nil {
		t.Errorf("a --set on the task that runs: %v, want it accepted", err)
	}
	changedLinked, _, err := schema.ApplySet(p, []string{"tasks[0].envs.A=1"}, clouds.Schema())
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.failedTaskLinks(ctx, j, changedLinked)
	var usage *contract.UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), `--set changes task 0 ("prep")`) {
		t.Errorf("a --set on a linked task: %v, want a usage error naming task 0", err)
	}
}
