package kubetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Kubelet plays one node's kubelet, and the scheduler for the pods it is
// given, through the API a real one uses: a Node object whose kubelet
// endpoint is a TLS server on 127.0.0.1 that serves the container logs the
// test sets; binding pods to the node; the pod status subresource.
type Kubelet struct {
	Node string
	cs   kubernetes.Interface
	srv  *httptest.Server

	mu      sync.Mutex
	logs    map[string]string        // namespace/pod/container -> log
	ended   map[string]chan struct{} // namespace/pod/ -> closed once the pod's containers ended
	follows map[string]int           // namespace/pod/container -> follows of it under way
	full    map[string]bool          // namespaces whose new pods no node fits
}

// Full makes Serve leave the new pods of namespace ns Unschedulable, as
// the scheduler does when no node has room (full false undoes it).
func (k *Kubelet) Full(ns string, full bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.full[ns] = full
}

func (k *Kubelet) isFull(ns string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.full[ns]
}

// StartKubelet registers node name and serves its kubelet endpoint until
// the test ends.
func (cp *ControlPlane) StartKubelet(t testing.TB, name string) *Kubelet {
	t.Helper()
	k := &Kubelet{Node: name, cs: cp.Client, logs: map[string]string{}, ended: map[string]chan struct{}{}, follows: map[string]int{}, full: map[string]bool{}}
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(k.serve))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k.srv.Listener = l
	k.srv.StartTLS()
	t.Cleanup(k.srv.Close)
	port := int32(l.Addr().(*net.TCPAddr).Port)
	ctx := context.Background()
	node, err := cp.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}
	if _, err := cp.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node %s status: %v", name, err)
	}
	return k
}

// serve answers the apiserver's /containerLogs/NS/POD/CONTAINER requests;
// with follow=true, as a kubelet does, it goes on sending what the log
// gains until the pod's containers end (Exit, Disrupt, FinishDeletion).
func (k *Kubelet) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/containerLogs/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	k.mu.Lock()
	log, found := k.logs[rest]
	k.mu.Unlock()
	if !found {
		http.Error(w, "container not found", http.StatusNotFound)
		return
	}
	fmt.Fprint(w, log)
	if r.URL.Query().Get("follow") != "true" {
		return
	}
	ended := k.endedOf(rest[:strings.LastIndex(rest, "/")+1])
	k.mu.Lock()
	k.follows[rest]++
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.follows[rest]--
		k.mu.Unlock()
	}()
	sent := len(log)
	for {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		var end bool
		select {
		case <-ended:
			end = true
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
		k.mu.Lock()
		log = k.logs[rest]
		k.mu.Unlock()
		if len(log) > sent {
			fmt.Fprint(w, log[sent:])
			sent = len(log)
		}
		if end {
			return
		}
	}
}

// endedOf is the channel closed once the containers of the pod named by
// prefix (namespace/pod/) end.
func (k *Kubelet) endedOf(prefix string) chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	ch, ok := k.ended[prefix]
	if !ok {
		ch = make(chan struct{})
		k.ended[prefix] = ch
	}
	return ch
}

// endLogs ends the logs of pod's containers: a follow of them ends.
func (k *Kubelet) endLogs(ns, pod string) {
	ch := k.endedOf(ns + "/" + pod + "/")
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Following says whether someone follows the container's log (the pod
// log API with follow=true).
func (k *Kubelet) Following(ns, pod, container string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.follows[ns+"/"+pod+"/"+container] > 0
}

// SetLog sets what the container's log holds.
func (k *Kubelet) SetLog(ns, pod, container, log string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.logs[ns+"/"+pod+"/"+container] = log
}

// AppendLog adds to what the container's log holds, as the container
// writes more.
func (k *Kubelet) AppendLog(ns, pod, container, more string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.logs[ns+"/"+pod+"/"+container] += more
}

// Bind schedules the pod onto the node, as the scheduler does.
func (k *Kubelet) Bind(ctx context.Context, ns, pod string) error {
	err := k.cs.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod},
		Target: corev1.ObjectReference{Kind: "Node", Name: k.Node}}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) {
		return nil // already bound
	}
	return err
}

// Unschedulable marks the pod as the scheduler does when no node fits it,
// since since.
func (k *Kubelet) Unschedulable(ctx context.Context, ns, pod, msg string, since time.Time) error {
	return k.status(ctx, ns, pod, func(p *corev1.Pod) {
		setCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.NewTime(since)})
	})
}

// Run binds the pod and moves it to Running, its containers started, with
// address ip.
func (k *Kubelet) Run(ctx context.Context, ns, pod, ip string) error {
	if err := k.Bind(ctx, ns, pod); err != nil {
		return err
	}
	return k.status(ctx, ns, pod, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.HostIP = ip, "127.0.0.1"
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		p.Status.StartTime = &now
		setCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
		setCondition(p, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
	})
}

// Waiting leaves the pod Pending with its containers waiting for reason
// (ErrImagePull, ImagePullBackOff).
func (k *Kubelet) Waiting(ctx context.Context, ns, pod, reason, msg string) error {
	if err := k.Bind(ctx, ns, pod); err != nil {
		return err
	}
	return k.status(ctx, ns, pod, func(p *corev1.Pod) {
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}})
		}
	})
}

// Exit ends the pod's containers with code, message as their termination
// message, the pod Succeeded (code 0) or Failed.
func (k *Kubelet) Exit(ctx context.Context, ns, pod string, code int, message string) error {
	k.endLogs(ns, pod)
	return k.status(ctx, ns, pod, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			p.Status.Phase = corev1.PodFailed
		}
		setCondition(p, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now})
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.Ready, cs.Started = false, ptr.To(false)
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(code),
				Message: message, StartedAt: started, FinishedAt: now, Reason: reasonFor(code)}}
		}
	})
}

// Disrupt marks the pod as the cluster does before it takes the pod away
// (a node drain, a spot node's loss, preemption by the scheduler): the
// DisruptionTarget condition with reason, then the pod Failed.
func (k *Kubelet) Disrupt(ctx context.Context, ns, pod, reason string) error {
	k.endLogs(ns, pod)
	return k.status(ctx, ns, pod, func(p *corev1.Pod) {
		now := metav1.Now()
		setCondition(p, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason,
			Message: "taken by the test", LastTransitionTime: now})
		p.Status.Phase = corev1.PodFailed
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
				Reason: "Error", FinishedAt: now}}
		}
	})
}

// FinishDeletion completes the graceful deletion of a pod bound to the
// node, as the kubelet does once its containers stopped.
func (k *Kubelet) FinishDeletion(ctx context.Context, ns, pod string) error {
	k.endLogs(ns, pod)
	err := k.cs.CoreV1().Pods(ns).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Serve runs the node's kubelet, and the scheduler, for every pod of
// namespace ns until ctx ends: each new pod is bound and Running (pod IP
// 10.1.X.Y), or Unschedulable while the namespace is Full; each pod being
// deleted is deleted at once.
func (k *Kubelet) Serve(ctx context.Context, ns string) error {
	return k.servePods(ctx, ns, "10.1", func(p *corev1.Pod) error {
		return k.FinishDeletion(ctx, ns, p.Name)
	}, nil)
}

// servePods plays the scheduler and the kubelet for every pod of ns until
// ctx ends: a pod being deleted goes to deleted; a new one is
// Unschedulable while the namespace is Full, else bound and Running with
// the pod IP net.X.Y, then given to started (when not nil). The pods come
// from an informer, which lists again when its watch ends.
func (k *Kubelet) servePods(ctx context.Context, ns, net string, deleted, started func(*corev1.Pod) error) error {
	seq := 0
	lw := cache.NewListWatchFromClient(k.cs.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, isPod := ev.Object.(*corev1.Pod)
		if !isPod || ev.Type == watch.Deleted {
			return false, nil
		}
		var err error
		switch {
		case p.DeletionTimestamp != nil:
			err = deleted(p)
		case p.Spec.NodeName == "" && k.isFull(ns):
			if c := podCondition(p, corev1.PodScheduled); c == nil || c.Reason != corev1.PodReasonUnschedulable {
				err = k.Unschedulable(ctx, ns, p.Name, "0/1 nodes are available: 1 Insufficient cpu.", time.Now())
			}
		case p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending:
			seq++
			err = k.Run(ctx, ns, p.Name, fmt.Sprintf("%s.%d.%d", net, seq/250, seq%250+1))
			if err == nil && started != nil {
				err = started(p)
			}
		}
		if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("kubelet %s, pod %s: %w", k.Node, p.Name, err)
		}
		return false, nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (k *Kubelet) status(ctx context.Context, ns, name string, change func(*corev1.Pod)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := k.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(p)
		_, err = k.cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func setCondition(p *corev1.Pod, c corev1.PodCondition) {
	if old := podCondition(p, c.Type); old != nil {
		*old = c
		return
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func reasonFor(code int) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}
