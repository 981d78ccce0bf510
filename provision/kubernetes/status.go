package kubernetes

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"sortie/provision"
	"sortie/schema"
)

// Status implements provision.Provider from the informers' caches: no
// call per cluster, one watch per context and namespace.
func (p *Provider) Status(ctx context.Context, names []string) (map[string]*provision.Cluster, error) {
	out := map[string]*provision.Cluster{}
	if len(names) == 0 {
		return out, nil
	}
	places, err := p.allPlacements()
	if err != nil {
		return nil, err
	}
	for _, at := range places {
		w, err := p.watcherAt(ctx, at)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if prev, found := out[name]; found && !torndown(prev) {
				continue
			}
			c, err := p.clusterAt(w, at, name)
			if err != nil {
				return nil, err
			}
			// A cluster launched again at the next placement, after a
			// capacity miss, wins over what is left at the last one.
			if c != nil && (out[name] == nil || !torndown(c)) {
				out[name] = c
			}
		}
	}
	return out, nil
}

// List implements provision.Provider: every cluster sortie's labels mark,
// in every context and namespace it may use.
func (p *Provider) List(ctx context.Context) ([]*provision.Cluster, error) {
	places, err := p.allPlacements()
	if err != nil {
		return nil, err
	}
	var out []*provision.Cluster
	for _, at := range places {
		w, err := p.watcherAt(ctx, at)
		if err != nil {
			return nil, err
		}
		names := map[string]bool{}
		parents, err := w.parents.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, cm := range parents {
			names[cm.Labels[provision.TagCluster]] = true
		}
		pods, err := w.pods.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, pod := range pods {
			names[pod.Labels[provision.TagCluster]] = true
		}
		delete(names, "")
		for name := range names {
			c, err := p.clusterAt(w, at, name)
			if err != nil {
				return nil, err
			}
			if c != nil {
				out = append(out, c)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p *Provider) watcherAt(ctx context.Context, at schema.Placement) (*watcher, error) {
	kc, err := p.kubeContext(at.Region)
	if err != nil {
		return nil, err
	}
	return kc.watch(ctx, at.Zone)
}

// clusterAt builds cluster name from the watcher's cache: its parent and
// pods, nil when neither is there.
func (p *Provider) clusterAt(w *watcher, at schema.Placement, name string) (*provision.Cluster, error) {
	parent, err := w.parents.ConfigMaps(at.Zone).Get(name)
	if apierrors.IsNotFound(err) {
		parent, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	pods, err := w.clusterPods(name)
	if err != nil {
		return nil, err
	}
	if parent == nil && len(pods) == 0 {
		return nil, nil
	}
	c := &provision.Cluster{Name: name, Placement: at, Tags: map[string]string{}}
	n := 0
	if parent != nil {
		maps.Copy(c.Tags, parent.Labels)
		n, _ = strconv.Atoi(parent.Data[KeyNumNodes])
	}
	byRank := map[int]*corev1.Pod{}
	for _, pod := range pods {
		rank, err := strconv.Atoi(pod.Labels[provision.TagRank])
		if err != nil || rank < 0 {
			continue
		}
		byRank[rank] = pod
		if rank+1 > n {
			n = rank + 1
		}
		if parent == nil {
			for k, v := range pod.Labels {
				if k != provision.TagRank {
					c.Tags[k] = v
				}
			}
		}
	}
	p.mu.Lock()
	asked := p.deleting[placeKey(at, name)]
	p.mu.Unlock()
	// Sortie tearing the cluster down: it asked, or the parent is going.
	teardown := asked || parent == nil || parent.DeletionTimestamp != nil
	for rank := range n {
		pod := byRank[rank]
		if asked {
			// What is left is on its way out at sortie's asking, even a
			// pod the cache has not seen deleted yet.
			pod = nil
		}
		n := nodeOf(rank, pod, teardown || p.wasStopped(at, podName(name, rank)))
		if n.State == provision.NodePreempted {
			n.LogReadable = p.logReadable(at, podName(name, rank), pod)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

// logReadable says whether the log of pod (nil when gone), taken away, can
// still be read: through the pod log API while the pod is there and its
// container started, else from what was read of it as it went.
func (p *Provider) logReadable(at schema.Placement, name string, pod *corev1.Pod) bool {
	if pod != nil && hasLog(pod) {
		return true
	}
	// One still being read is readable: ReadTaskLog waits for it.
	t := p.takenLogOf(at, name)
	return t != nil && (!t.ended() || t.err == nil)
}

// nodeOf is the node that pod (nil when missing) is. A pod the cluster
// took away is preempted: evicted, deleted, or marked DisruptionTarget
// (a drain, a spot node's loss, preemption by a higher priority pod). A
// pod whose task ended is still running as a node: its exit code is the
// task's, read with TaskStatus.
func nodeOf(rank int, pod *corev1.Pod, teardown bool) provision.Node {
	n := provision.Node{Rank: rank}
	if pod == nil {
		if teardown {
			n.State = provision.NodeTerminated
		} else {
			n.State, n.Reason = provision.NodePreempted, "pod deleted"
		}
		return n
	}
	n.InstanceID, n.IP, n.Host = string(pod.UID), pod.Status.PodIP, pod.Spec.NodeName
	if c := condition(pod, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		n.State, n.Reason = provision.NodePreempted, joinReason(c.Reason, c.Message)
		if teardown {
			n.State = provision.NodeTerminated
		}
		return n
	}
	switch {
	case pod.DeletionTimestamp != nil && teardown:
		n.State = provision.NodeTerminated
	case pod.DeletionTimestamp != nil:
		n.State, n.Reason = provision.NodePreempted, "pod deleted by the cluster (a drain or an eviction)"
	case pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == "Evicted":
		n.State, n.Reason = provision.NodePreempted, joinReason("Evicted", pod.Status.Message)
	case pod.Status.Phase == corev1.PodPending:
		n.State, n.Reason = provision.NodePending, pendingReason(pod)
	case pod.Status.Phase == corev1.PodUnknown:
		n.State, n.Reason = provision.NodeRunning, "pod status unknown: its node does not answer"
	default:
		n.State = provision.NodeRunning
	}
	return n
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// pendingReason says why a pod is not running yet: unschedulable, or its
// container waiting (pulling the image).
func pendingReason(pod *corev1.Pod) string {
	if c := condition(pod, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
		return joinReason(c.Reason, c.Message)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return joinReason(w.Reason, w.Message)
		}
	}
	return ""
}

func joinReason(reason, msg string) string {
	if msg == "" {
		return reason
	}
	if reason == "" {
		return msg
	}
	return reason + ": " + msg
}

// TaskStatus implements provision.TaskRunner: node rank's task of
// cluster c from the pod's container status, the exit code from
// containerStatuses[].state.terminated, the phase from its termination
// message.
func (p *Provider) TaskStatus(ctx context.Context, c *provision.Cluster, rank int) (provision.TaskStatus, error) {
	w, err := p.watcherAt(ctx, c.Placement)
	if err != nil {
		return provision.TaskStatus{}, err
	}
	var st provision.TaskStatus
	if parent, err := w.parents.ConfigMaps(c.Placement.Zone).Get(c.Name); err == nil {
		_, st.Started = parent.Data[KeyStart]
	}
	pod, err := w.pods.Pods(c.Placement.Zone).Get(podName(c.Name, rank))
	if err != nil {
		return st, fmt.Errorf("pod %s: %w", podName(c.Name, rank), err)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != ContainerName || cs.State.Terminated == nil {
			continue
		}
		t := cs.State.Terminated
		st.Done, st.ExitCode = true, int(t.ExitCode)
		st.Phase = PhaseRun
		if strings.TrimSpace(t.Message) == PhaseSetup {
			st.Phase = PhaseSetup
		}
	}
	return st, nil
}

// torndown says whether every node of c is terminated by sortie.
func torndown(c *provision.Cluster) bool {
	for _, n := range c.Nodes {
		if n.State != provision.NodeTerminated {
			return false
		}
	}
	return true
}
