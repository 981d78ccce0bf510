package service

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/provision/node/notice"
	"sortie/schema"
)

// A notice on local writes the node's request, schedules its preemption,
// records the notice with the attempt and nudges the controller.
func TestNotice(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	now := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return now }
	nudged := 0
	s.StartDaemon = func(context.Context, string) error { nudged++; return nil }
	id, err := s.Store.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte("{}")}, []store.NewTask{{}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Store.NewAttempt(ctx, id, 0, func(n int) string { return provision.ClusterName(id, 0, n) }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	prov := clouds.LocalProvider(s.Config)
	cl, err := prov.Launch(ctx, provision.ClusterSpec{Name: a.Cluster, Placement: schema.Placement{Cloud: "local", Region: "local", Zone: "local-a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Terminate(ctx, cl.Name)
	if err := s.Store.MarkLaunched(ctx, a.ID, "local", cl.Placement.Region, cl.Placement.Zone, []string{cl.Nodes[0].InstanceID}); err != nil {
		t.Fatal(err)
	}
	if err := s.Store.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct {
		d    time.Duration
		rank int
		want string
	}{
		{0, 0, "--notice: 0s is out of range; give a duration from 1s to 1h0m0s"},
		{2 * time.Hour, 0, "--notice: 2h0m0s is out of range"},
		{time.Minute, 3, "--node: 3 is not a node of job"},
	} {
		_, _, err := s.Notice(ctx, id, bad.rank, bad.d)
		var ue *contract.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Notice(%s, node %d): %v, want a usage error saying %q", bad.d, bad.rank, err, bad.want)
		}
	}

	cluster, deadline, err := s.Notice(ctx, id, 0, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if cluster != a.Cluster || !deadline.Equal(now.Add(30*time.Second)) || nudged != 1 {
		t.Errorf("cluster %s deadline %s nudged %d times; want %s, %s, once", cluster, deadline, nudged, a.Cluster, now.Add(30*time.Second))
	}
	r, err := prov.Runner(ctx, cl, 0)
	if err != nil {
		t.Fatal(err)
	}
	req, ok, err := notice.ReadRequest(node.ForAttempt(r, a.Attempt).Dir())
	if err != nil || !ok || req.Kind != notice.KindPreempted || !req.Deadline.Equal(deadline) {
		t.Errorf("request on the node: %+v (%v, %v), want preempted with the deadline", req, ok, err)
	}
	got, _ := s.Store.LastAttempt(ctx, id, 0)
	if got.Notice == nil || got.Notice.Source != notice.SourceLocal || !got.Notice.At.Equal(now) || !got.Notice.Deadline.Equal(deadline) {
		t.Errorf("stored notice %+v", got.Notice)
	}
}
