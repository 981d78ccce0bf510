package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"sortie/provision"
	"sortie/provision/node"
)

// Terminate implements provision.Provider: it deletes the cluster's pods
// (each gets its grace period, job_recovery.termination_grace), its
// Secret and its parent, in whichever context and namespace it is.
// Deleting the parent alone would do where a garbage collector runs; the
// pods are deleted too so that nothing depends on one.
func (p *Provider) Terminate(ctx context.Context, name string) error {
	places, err := p.allPlacements()
	if err != nil {
		return err
	}
	for _, at := range places {
		kc, err := p.kubeContext(at.Region)
		if err != nil {
			return err
		}
		w, err := kc.watch(ctx, at.Zone)
		if err != nil {
			return err
		}
		if c, err := p.clusterAt(w, at, name); err != nil || c == nil {
			continue
		}
		p.markDeleting(at, name, true)
		if err := p.deleteCluster(ctx, kc, at.Zone, name); err != nil {
			return err
		}
		p.logger(ctx).Info("cluster deleted", "cluster", name, "context", at.Region, "namespace", at.Zone)
	}
	return nil
}

// deleteCluster deletes every object of cluster name in namespace ns; what
// is gone already is no error.
func (p *Provider) deleteCluster(ctx context.Context, kc *kubeContext, ns, name string) error {
	sel := labels.Set{provision.TagCluster: name}.String()
	err := kc.core.Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel})
	if err != nil && !apierrors.IsNotFound(err) {
		return classify(fmt.Errorf("delete the pods of %s in %s/%s: %w", name, kc.name, ns, err))
	}
	background := metav1.DeletePropagationBackground
	err = kc.core.Secrets(ns).Delete(ctx, secretName(name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return classify(fmt.Errorf("delete the Secret of %s in %s/%s: %w", name, kc.name, ns, err))
	}
	err = kc.core.ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return classify(fmt.Errorf("delete the parent of %s in %s/%s: %w", name, kc.name, ns, err))
	}
	return nil
}

// StartTask implements provision.TaskRunner: it hands t to every pod of
// c, the environment into the cluster's Secret, then the script and the
// nodes' addresses into the parent ConfigMap, whose start key the pods
// wait for. Starting again is a no-op.
func (p *Provider) StartTask(ctx context.Context, c *provision.Cluster, t provision.Task) error {
	exports, err := node.EnvExports(t.Env)
	if err != nil {
		return provision.Prechecks(err)
	}
	list, files, err := filesData(t.Files)
	if err != nil {
		return provision.Prechecks(err)
	}
	kc, err := p.kubeContext(c.Placement.Region)
	if err != nil {
		return err
	}
	ns := c.Placement.Zone
	parent, err := kc.core.ConfigMaps(ns).Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return classify(fmt.Errorf("read the parent of %s: %w", c.Name, err))
	}
	if _, started := parent.Data[KeyStart]; started {
		return nil
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName(c.Name), Namespace: ns,
		Labels: parent.Labels, OwnerReferences: ownedBy(parent)},
		StringData: map[string]string{KeyEnv: string(exports)}}
	_, err = kc.core.Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = kc.core.Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		return classify(fmt.Errorf("write the environment of %s: %w", c.Name, err))
	}
	var ips []string
	for _, n := range c.Nodes {
		ips = append(ips, n.IP)
	}
	parent.Data[KeySetup], parent.Data[KeyRun], parent.Data[KeyNodeIPs] = t.Setup, t.Run, strings.Join(ips, "\n")
	if len(files) > 0 {
		parent.Data[KeyFiles] = list
		parent.BinaryData = files
	}
	parent.Data[KeyStart] = "1"
	if _, err := kc.core.ConfigMaps(ns).Update(ctx, parent, metav1.UpdateOptions{}); err != nil {
		return classify(fmt.Errorf("start the task of %s: %w", c.Name, err))
	}
	return nil
}

// ReadTaskLog implements provision.TaskRunner: node rank's container log
// from byte offset on, at most max bytes, through the pod log API (the
// kubelet keeps it while the pod exists). The log of a pod the cluster
// took away comes from what was read of it as it went (podSeen): once
// that read is whole, or when the pod is gone; while the pod is still in
// its grace period, that read is waited for, until shortly before ctx
// ends, and the log so far is read from the API after that.
func (p *Provider) ReadTaskLog(ctx context.Context, c *provision.Cluster, rank int, offset int64, max int) ([]byte, error) {
	pod := podName(c.Name, rank)
	taken := p.takenLogOf(c.Placement, pod)
	if taken != nil {
		wctx, cancel := waitShort(ctx)
		select {
		case <-taken.done:
		case <-wctx.Done():
		}
		cancel()
		if taken.whole() {
			return chunk(taken.data, offset, max), nil
		}
	}
	kc, err := p.kubeContext(c.Placement.Region)
	if err != nil {
		return nil, err
	}
	rc, err := kc.core.Pods(c.Placement.Zone).GetLogs(pod, &corev1.PodLogOptions{Container: ContainerName}).Stream(ctx)
	if apierrors.IsNotFound(err) && taken != nil {
		return readTaken(ctx, taken, pod, offset, max)
	}
	if err != nil {
		return nil, classify(fmt.Errorf("read the log of pod %s: %w", pod, err))
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, offset); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	if max <= 0 {
		return io.ReadAll(rc)
	}
	return io.ReadAll(io.LimitReader(rc, int64(max)))
}

// StopTask implements provision.TaskRunner: it deletes node rank's pod,
// whose task gets its grace period (job_recovery.termination_grace) to
// end after SIGTERM; the node is terminated by sortie from then on, never
// taken for a preemption.
func (p *Provider) StopTask(ctx context.Context, c *provision.Cluster, rank int) error {
	kc, err := p.kubeContext(c.Placement.Region)
	if err != nil {
		return err
	}
	pod := podName(c.Name, rank)
	p.markStopped(c.Placement, pod)
	err = kc.core.Pods(c.Placement.Zone).Delete(ctx, pod, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return classify(fmt.Errorf("stop the task of pod %s: %w", pod, err))
	}
	return nil
}

// Runner implements provision.Provider. A pod runs its task as its
// container command and nothing else: sortie runs no commands in it (no
// exec, no agent), so the runner refuses every command, saying why.
func (p *Provider) Runner(_ context.Context, c *provision.Cluster, rank int) (provision.Runner, error) {
	if rank < 0 || rank >= len(c.Nodes) {
		return nil, fmt.Errorf("cluster %s has no node %d", c.Name, rank)
	}
	return podRunner{pod: podName(c.Name, rank)}, nil
}

type podRunner struct{ pod string }

func (r podRunner) Exec(context.Context, string, io.Reader) ([]byte, error) {
	return nil, provision.Prechecks(fmt.Errorf("pod %s runs the task as its container command; sortie runs no other commands in pods (kubectl exec %s works for a person)", r.pod, r.pod))
}
func (r podRunner) Dir() string  { return "/" }
func (r podRunner) Close() error { return nil }

// FilesLimit implements provision.TaskRunner: a task's files travel in
// its parent ConfigMap, which Kubernetes holds to 1 MiB with the scripts.
func (p *Provider) FilesLimit() int64 { return MaxFiles }
