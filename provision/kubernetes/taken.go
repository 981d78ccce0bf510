package kubernetes

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"sortie/provision"
	"sortie/schema"
)

// A pod the cluster takes away (evicted, deleted, or marked
// DisruptionTarget) keeps its log only while the pod exists: once its
// containers end its grace period and the pod is gone, the pod log API has
// nothing to answer. So as soon as a watch sees a pod go, not at sortie's
// asking, the provider reads its log, following it until the container
// ends, and keeps it in memory (its last MaxTakenLog bytes) until sortie
// tears the cluster down. ReadTaskLog answers from that copy once it is
// whole, or when the pod is gone.

// MaxTakenLog is the most bytes of a taken pod's log the provider keeps:
// the end of the log, where a task says what it did with its SIGTERM.
const MaxTakenLog = 8 << 20

// takenSlack is how long past its grace period a taken pod's log is
// followed before the read is given up.
const takenSlack = time.Minute

// takenLog is the log of a pod the cluster took away, as read while it went.
type takenLog struct {
	uid     string
	cluster string
	cancel  context.CancelFunc
	done    chan struct{} // closed once data and err are set
	data    []byte
	err     error
}

// ended says whether the read has ended.
func (t *takenLog) ended() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// whole says whether the read has ended, and well.
func (t *takenLog) whole() bool { return t.ended() && t.err == nil }

// takenAway says whether the cluster is taking pod away: being deleted,
// marked DisruptionTarget, or evicted by its kubelet.
func takenAway(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return true
	}
	if c := condition(pod, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		return true
	}
	return pod.Status.Phase == corev1.PodFailed && pod.Status.Reason == "Evicted"
}

// hasLog says whether pod's task container has started, so that its
// kubelet has a log of it.
func hasLog(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && slices.ContainsFunc(pod.Status.ContainerStatuses, func(cs corev1.ContainerStatus) bool {
		return cs.Name == ContainerName && (cs.State.Running != nil || cs.State.Terminated != nil)
	})
}

// podSeen is the pods informer's handler: a pod of a cluster sortie is
// not tearing down (it did not ask, and the parent is there and not
// going), whose task it did not stop, that the cluster is taking away, has
// its log read while it can be (followLog).
func (p *Provider) podSeen(at schema.Placement, pod *corev1.Pod, parents corelisters.ConfigMapLister) {
	if !takenAway(pod) || !hasLog(pod) {
		return
	}
	cluster := pod.Labels[provision.TagCluster]
	if parent, err := parents.ConfigMaps(at.Zone).Get(cluster); err != nil || parent.DeletionTimestamp != nil {
		return
	}
	key := placeKey(at, pod.Name)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.deleting[placeKey(at, cluster)] || p.stopped[key] {
		return
	}
	if t := p.taken[key]; t != nil && t.uid == string(pod.UID) {
		return
	}
	grace := int64(30)
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		grace = *g
	} else if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	ctx, cancel := context.WithTimeout(p.bg, time.Duration(grace)*time.Second+takenSlack)
	t := &takenLog{uid: string(pod.UID), cluster: cluster, cancel: cancel, done: make(chan struct{})}
	if old := p.taken[key]; old != nil {
		old.cancel()
	}
	p.taken[key] = t
	p.reading.Add(1)
	go func() {
		defer p.reading.Done()
		defer cancel()
		t.data, t.err = p.followLog(ctx, at, pod.Name)
		close(t.done)
		if t.err != nil {
			p.cfg.Logger.Warn("read the log of a pod taken away", "pod", pod.Name, "context", at.Region, "namespace", at.Zone, "err", t.err)
		}
	}()
}

// followLog reads pod's task log until its container ends (the stream
// ends), keeping the last MaxTakenLog bytes.
func (p *Provider) followLog(ctx context.Context, at schema.Placement, pod string) ([]byte, error) {
	kc, err := p.kubeContext(at.Region)
	if err != nil {
		return nil, err
	}
	rc, err := kc.core.Pods(at.Zone).GetLogs(pod, &corev1.PodLogOptions{Container: ContainerName, Follow: true}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the log of pod %s as it went: %w", pod, err)
	}
	defer rc.Close()
	tail := &tailBuffer{max: MaxTakenLog}
	if _, err := io.Copy(tail, rc); err != nil {
		return nil, fmt.Errorf("read the log of pod %s as it went: %w", pod, err)
	}
	return tail.bytes(), nil
}

// takenLogOf is what was read of pod's log at at as it went, nil when
// nothing was.
func (p *Provider) takenLogOf(at schema.Placement, pod string) *takenLog {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.taken[placeKey(at, pod)]
}

// readTaken waits, within ctx, for what is read of a taken pod's log as
// it went, and answers from offset on, at most max bytes.
func readTaken(ctx context.Context, t *takenLog, pod string, offset int64, max int) ([]byte, error) {
	select {
	case <-t.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("read the log of pod %s: it is gone, and its log is still being read: %w", pod, ctx.Err())
	}
	if t.err != nil {
		return nil, fmt.Errorf("read the log of pod %s: it is gone, and reading it as it went failed: %w", pod, t.err)
	}
	return chunk(t.data, offset, max), nil
}

// chunk is data from offset on, at most max bytes (all when max <= 0).
func chunk(data []byte, offset int64, max int) []byte {
	if offset >= int64(len(data)) {
		return nil
	}
	b := data[offset:]
	if max > 0 && len(b) > max {
		b = b[:max]
	}
	return append([]byte(nil), b...)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf     []byte
	dropped int64
	max     int
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.max {
		t.trim()
	}
	return len(b), nil
}

func (t *tailBuffer) trim() {
	if cut := len(t.buf) - t.max; cut > 0 {
		t.dropped += int64(cut)
		t.buf = append([]byte(nil), t.buf[cut:]...)
	}
}

// bytes is the log kept, after a line saying how much of its beginning
// was not.
func (t *tailBuffer) bytes() []byte {
	t.trim()
	if t.dropped == 0 {
		return t.buf
	}
	note := fmt.Sprintf("[sortie: the first %d bytes of this log were not kept; its last %d follow]\n", t.dropped, len(t.buf))
	return append([]byte(note), t.buf...)
}

// waitShort is ctx ending a little before it does (a fifth of the time
// left, at most 5 s), so that what follows the wait still has time; ctx
// itself when it has no deadline.
func waitShort(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	left := time.Until(deadline)
	return context.WithDeadline(ctx, deadline.Add(-min(left/5, 5*time.Second)))
}
