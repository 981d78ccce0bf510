package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"sortie/provision"
	"sortie/schema"
)

// Launch implements provision.Provider: the parent ConfigMap, then one pod
// per rank owned by it; it returns once every pod runs (or has already
// ended its task) with an address. A pod left Unschedulable for longer
// than ProvisionTimeout is a capacity error, an image that cannot be
// pulled a prechecks error; either way the cluster is deleted first.
func (p *Provider) Launch(ctx context.Context, spec provision.ClusterSpec) (*provision.Cluster, error) {
	if spec.Placement.Cloud != CloudName {
		return nil, provision.Prechecks(fmt.Errorf("kubernetes cannot launch at %s", spec.Placement))
	}
	if spec.NumNodes < 1 {
		return nil, provision.Prechecks(fmt.Errorf("num_nodes: %d; a cluster needs at least one pod", spec.NumNodes))
	}
	if err := checkLabels(spec.Resources.Labels); err != nil {
		return nil, err
	}
	if _, err := p.Placements(ctx, schema.Resources{Region: spec.Placement.Region, Zone: spec.Placement.Zone}); err != nil {
		return nil, err
	}
	// A request no pod can carry is refused before anything is created.
	if _, err := p.podFor(spec, &corev1.ConfigMap{}, 0); err != nil {
		return nil, err
	}
	unlock := p.launches.Lock(spec.Name)
	defer unlock()
	p.markDeleting(spec.Placement, spec.Name, false)

	kc, err := p.kubeContext(spec.Placement.Region)
	if err != nil {
		return nil, err
	}
	w, err := kc.watch(ctx, spec.Placement.Zone)
	if err != nil {
		return nil, err
	}
	var c *provision.Cluster
	if err = p.create(ctx, kc, spec); err == nil {
		c, err = p.waitRunning(ctx, w, spec)
	}
	if err != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		p.markDeleting(spec.Placement, spec.Name, true)
		if derr := p.deleteCluster(cleanup, kc, spec.Placement.Zone, spec.Name); derr != nil {
			p.logger(ctx).Warn("delete the cluster of a failed launch", "cluster", spec.Name, "err", derr)
		} else {
			p.waitDeleted(cleanup, w, spec)
		}
		return nil, err
	}
	return c, nil
}

// create makes the parent and every pod missing; what exists is kept, so
// a launch that died half way is finished, never doubled.
func (p *Provider) create(ctx context.Context, kc *kubeContext, spec provision.ClusterSpec) error {
	ns := spec.Placement.Zone
	cms := kc.core.ConfigMaps(ns)
	parent, err := cms.Create(ctx, parentFor(spec), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		parent, err = cms.Get(ctx, spec.Name, metav1.GetOptions{})
	}
	if err != nil {
		return classify(fmt.Errorf("create %s's parent ConfigMap in %s/%s: %w", spec.Name, kc.name, ns, err))
	}
	if parent.DeletionTimestamp != nil {
		return fmt.Errorf("cluster %s in %s/%s is being deleted; launch again once it is gone", spec.Name, kc.name, ns)
	}
	for rank := range spec.NumNodes {
		pod, err := p.podFor(spec, parent, rank)
		if err != nil {
			return err
		}
		_, err = kc.core.Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return classify(fmt.Errorf("create pod %s in %s/%s: %w", pod.Name, kc.name, ns, err))
		}
	}
	p.logger(ctx).Info("pods created", "cluster", spec.Name, "context", kc.name, "namespace", ns, "pods", spec.NumNodes)
	return nil
}

// waitDeleted waits until the cache no longer holds spec's cluster, so
// that a launch of the same name at the next placement is never mistaken
// for it. Pods bound to a node wait for their kubelet: the wait gives up
// after a while, and Status reports such pods terminated meanwhile.
func (p *Provider) waitDeleted(ctx context.Context, w *watcher, spec provision.ClusterSpec) {
	_ = wait.PollUntilContextTimeout(ctx, p.cfg.PollInterval, 30*time.Second, true, func(context.Context) (bool, error) {
		c, err := p.clusterAt(w, spec.Placement, spec.Name)
		return err != nil || c == nil, nil
	})
}

// cached says whether the informers' cache holds spec's parent and every
// pod Launch made: until then, a pod missing from it is not one deleted.
func (w *watcher) cached(spec provision.ClusterSpec) bool {
	if _, err := w.parents.ConfigMaps(spec.Placement.Zone).Get(spec.Name); err != nil {
		return false
	}
	for rank := range spec.NumNodes {
		if _, err := w.pods.Pods(spec.Placement.Zone).Get(podName(spec.Name, rank)); err != nil {
			return false
		}
	}
	return true
}

// waitRunning watches the cache until every pod of spec runs.
func (p *Provider) waitRunning(ctx context.Context, w *watcher, spec provision.ClusterSpec) (*provision.Cluster, error) {
	deadline := p.cfg.Now().Add(p.cfg.LaunchTimeout)
	last := ""
	var up *provision.Cluster
	err := wait.PollUntilContextCancel(ctx, p.cfg.PollInterval, true, func(context.Context) (bool, error) {
		var c *provision.Cluster
		if w.cached(spec) {
			var err error
			if c, err = p.clusterAt(w, spec.Placement, spec.Name); err != nil {
				return false, err
			}
			if done, err := p.launched(w, c, spec); done || err != nil {
				up = c
				return done, err
			}
		}
		if p.cfg.Now().After(deadline) {
			return false, fmt.Errorf("pods of %s not running after %s: %s", spec.Name, p.cfg.LaunchTimeout, describe(c))
		}
		if msg := describe(c); msg != last {
			provision.Progress(ctx, "waiting for pods: "+msg)
			last = msg
		}
		return false, nil
	})
	return up, err
}

// launched says whether c is up: every pod running (or past it) with an
// address. A pod that cannot start is an error of its class.
func (p *Provider) launched(w *watcher, c *provision.Cluster, spec provision.ClusterSpec) (bool, error) {
	if c == nil || len(c.Nodes) < spec.NumNodes {
		return false, nil
	}
	up := true
	for _, n := range c.Nodes {
		switch n.State {
		case provision.NodeRunning:
			up = up && n.IP != ""
		case provision.NodePending:
			up = false
			if err := p.notStarting(w, c, n); err != nil {
				return false, err
			}
		case provision.NodePreempted:
			return false, provision.Capacity(fmt.Errorf("pod %s was taken away while it started (%s)", podName(c.Name, n.Rank), n.Reason))
		default:
			return false, fmt.Errorf("pod %s is %s (%s) while it starts", podName(c.Name, n.Rank), n.State, n.Reason)
		}
	}
	return up, nil
}

// notStarting is the error of a pending pod that will not start: left
// Unschedulable past ProvisionTimeout (capacity), or its image or config
// refused (prechecks).
func (p *Provider) notStarting(w *watcher, c *provision.Cluster, n provision.Node) error {
	pod := podName(c.Name, n.Rank)
	reason, _, _ := strings.Cut(n.Reason, ": ")
	switch reason {
	case corev1.PodReasonUnschedulable:
		since, ok := unschedulableSince(w, c, n.Rank)
		if ok && p.cfg.Now().Sub(since) > p.cfg.ProvisionTimeout {
			return provision.Capacity(fmt.Errorf("pod %s unschedulable for over %s in %s/%s (kubernetes.provision_timeout): %s",
				pod, p.cfg.ProvisionTimeout, c.Placement.Region, c.Placement.Zone, n.Reason))
		}
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
		return provision.Prechecks(fmt.Errorf("pod %s cannot pull its image: %s; fix resources.image_id (docker:IMAGE) or kubernetes.image", pod, n.Reason))
	case "CreateContainerConfigError", "CreateContainerError":
		return provision.Prechecks(fmt.Errorf("pod %s cannot start its container: %s", pod, n.Reason))
	}
	return nil
}

// unschedulableSince is when rank's pod became unschedulable, as the
// scheduler recorded it in the watcher's cache.
func unschedulableSince(w *watcher, c *provision.Cluster, rank int) (time.Time, bool) {
	pod, err := w.pods.Pods(c.Placement.Zone).Get(podName(c.Name, rank))
	if err != nil {
		return time.Time{}, false
	}
	cond := condition(pod, corev1.PodScheduled)
	if cond == nil || cond.LastTransitionTime.IsZero() {
		return pod.CreationTimestamp.Time, !pod.CreationTimestamp.IsZero()
	}
	return cond.LastTransitionTime.Time, true
}

func describe(c *provision.Cluster) string {
	if c == nil {
		return "no pods yet"
	}
	s := ""
	for i, n := range c.Nodes {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%s %s", podName(c.Name, n.Rank), n.State)
		if n.Reason != "" {
			s += " (" + n.Reason + ")"
		}
	}
	return s
}

// classify sorts an API error: quota exceeded is capacity; forbidden,
// invalid or a missing namespace no retry fixes.
func classify(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	switch {
	case apierrors.IsForbidden(err) && isQuota(err):
		return provision.Capacity(err)
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return provision.Prechecks(fmt.Errorf("%w (see the README's RBAC Role, and `sortie check`)", err))
	case apierrors.IsInvalid(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err):
		return provision.Prechecks(err)
	}
	return err
}

func isQuota(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "exceeded quota")
}
