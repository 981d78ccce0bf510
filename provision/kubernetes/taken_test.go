package kubernetes

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"sortie/provision"
	"sortie/schema"
)

// TestATakenPodsLogOutlivesThePod: a pod the cluster evicts has its log
// read while it goes, what its task writes in its grace period included,
// and that log is still read, and said readable, once the pod is gone; a
// pod marked DisruptionTarget, still there, is readable through the API; a
// pod sortie stopped is not read as it goes; tearing the cluster down
// forgets what was read.
func TestATakenPodsLogOutlivesThePod(t *testing.T) {
	e := newQuietEnv(t, 1) // the test plays the kubelet
	ns := e.ns[0]
	p := e.provider(t)
	s := spec(7310, 3, ns, schema.Resources{})
	ctx := testContext(t)
	launched := make(chan *provision.Cluster, 1)
	go func() { launched <- launch(t, p, s) }()
	for rank := range 3 {
		pod := podName(s.Name, rank)
		until(t, ctx, "pod "+pod+" running", func() bool {
			return e.kubelet.Run(ctx, ns, pod, fmt.Sprintf("10.2.0.%d", rank+1)) == nil
		})
		e.kubelet.SetLog(ns, pod, ContainerName, "epoch 1\n")
	}
	c := <-launched

	// Node 0 is evicted; its task writes its checkpoint in its grace
	// period, then the kubelet ends the deletion and the pod is gone.
	pod0 := podName(s.Name, 0)
	err := cp.Client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod0, Namespace: ns}})
	if err != nil {
		t.Fatalf("evict: %v", err)
	}
	// A kubelet does not wait for a reader: this one gives the provider
	// 10 s to begin following the log, then goes on.
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if !poll(fctx, func() bool { return e.kubelet.Following(ns, pod0, ContainerName) }) {
		t.Errorf("no one followed the evicted pod's log")
	}
	cancel()
	e.kubelet.AppendLog(ns, pod0, ContainerName, "got SIGTERM, checkpoint saved\n")
	if err := e.kubelet.FinishDeletion(ctx, ns, pod0); err != nil {
		t.Fatal(err)
	}
	// Node 1 is marked DisruptionTarget and stays; node 2 sortie stops.
	if err := e.kubelet.Disrupt(ctx, ns, podName(s.Name, 1), "PreemptionByScheduler"); err != nil {
		t.Fatal(err)
	}
	if err := p.StopTask(ctx, c, 2); err != nil {
		t.Fatal(err)
	}
	var got *provision.Cluster
	until(t, ctx, "node 0 gone and node 1 preempted", func() bool {
		m, err := p.Status(ctx, []string{s.Name})
		if err != nil {
			t.Fatal(err)
		}
		got = m[s.Name]
		return got != nil && len(got.Nodes) == 3 && got.Nodes[0].Reason == "pod deleted" && got.Nodes[1].State == provision.NodePreempted
	})
	if n := got.Nodes[0]; n.State != provision.NodePreempted || !n.LogReadable {
		t.Errorf("evicted pod, gone: %+v; want preempted, its log readable", n)
	}
	if n := got.Nodes[1]; !n.LogReadable {
		t.Errorf("pod marked DisruptionTarget: %+v; want its log readable", n)
	}
	for rank, want := range map[int]string{0: "epoch 1\ngot SIGTERM, checkpoint saved\n", 1: "epoch 1\n"} {
		b, err := p.ReadTaskLog(ctx, c, rank, 0, node0Max)
		if err != nil || string(b) != want {
			t.Errorf("log of node %d: %q, %v; want %q", rank, b, err, want)
		}
	}
	if b, err := p.ReadTaskLog(ctx, c, 0, int64(len("epoch 1\n")), 6); err != nil || string(b) != "got SI" {
		t.Errorf("log of node 0 from byte 8, 6 bytes: %q, %v", b, err)
	}
	if p.takenLogOf(c.Placement, podName(s.Name, 2)) != nil {
		t.Errorf("the pod sortie stopped was read as if the cluster took it")
	}
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if p.takenLogOf(c.Placement, pod0) != nil {
		t.Errorf("the taken pod's log is still held after the teardown")
	}
}

// node0Max is the most bytes ReadTaskLog is asked for at once here.
const node0Max = 1 << 16

// until polls cond until it holds, failing t when ctx ends.
func until(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	if !poll(ctx, cond) {
		t.Fatalf("%s: never", what)
	}
}

// poll asks cond every 20 ms until it holds (true) or ctx ends (false).
func poll(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// TestTheEndOfALongTakenLogIsKept: past MaxTakenLog, the end of a taken
// pod's log is kept, after a line saying how much was not.
func TestTheEndOfALongTakenLogIsKept(t *testing.T) {
	tail := &tailBuffer{max: 10}
	for _, s := range []string{"0123456789", "abcdefghij", "klmnopqrst", "uv"} {
		tail.Write([]byte(s))
	}
	want := "[sortie: the first 22 bytes of this log were not kept; its last 10 follow]\nmnopqrstuv"
	if got := string(tail.bytes()); got != want {
		t.Errorf("kept %q, want %q", got, want)
	}
	short := &tailBuffer{max: 10}
	short.Write([]byte("short\n"))
	if got := string(short.bytes()); got != "short\n" {
		t.Errorf("a short log kept as %q", got)
	}
}

// TestOnlyPodsTheClusterTakesAreRead: a pod's log is read as it goes only
// when the cluster takes it: not when it is not going, when its container
// never started, when sortie stopped it, or when its cluster is being torn
// down (its parent gone or going).
func TestOnlyPodsTheClusterTakesAreRead(t *testing.T) {
	e := newQuietEnv(t, 1)
	p := e.provider(t)
	ns := e.ns[0]
	at := schema.Placement{Cloud: CloudName, Region: ctxA, Zone: ns}
	now := metav1.Now()
	podOf := func(name string, going, started bool) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns, UID: types.UID(name),
			Labels: map[string]string{provision.TagCluster: name}}, Spec: corev1.PodSpec{NodeName: "node"}}
		if going {
			pod.DeletionTimestamp = &now
		}
		if started {
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: ContainerName,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}
		return pod
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	parents := corelisters.NewConfigMapLister(idx)
	for _, name := range []string{"staying", "unstarted", "stopped", "taken"} {
		if err := idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "going", Namespace: ns, DeletionTimestamp: &now}}); err != nil {
		t.Fatal(err)
	}
	p.markStopped(at, "stopped-0")
	for _, pod := range []*corev1.Pod{podOf("staying", false, true), podOf("unstarted", true, false), podOf("stopped", true, true),
		podOf("going", true, true), podOf("orphan", true, true), podOf("taken", true, true)} {
		p.podSeen(at, pod, parents)
		if got, want := p.takenLogOf(at, pod.Name) != nil, pod.Name == "taken-0"; got != want {
			t.Errorf("pod %s read as it goes: %v, want %v", pod.Name, got, want)
		}
	}
}
