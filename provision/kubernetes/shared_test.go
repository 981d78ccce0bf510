package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sortie/provision"
	"sortie/schema"
)

// A fraction of one GPU asks share x per_gpu units of the shared resource
// the config names for the accelerator (time-slicing or a MIG profile),
// and no whole GPU; the apiserver keeps that request on the pod.
func TestFractionalGPURequestsTheSharedResource(t *testing.T) {
	e := newEnv(t, 1)
	p := e.provider(t, func(c *Config) {
		c.SharedGPUs = map[string]SharedGPU{
			"A100": {Resource: "nvidia.com/gpu.shared", PerGPU: 4},
			"h100": {Resource: "nvidia.com/mig-3g.40gb", PerGPU: 2},
		}
	})
	ctx := testContext(t)
	for i, tc := range []struct {
		accelerator string
		share       float64
		resource    corev1.ResourceName
		units       string
		label       string
	}{
		{"A100", 0.5, "nvidia.com/gpu.shared", "2", "a100"},
		{"H100", 0.5, "nvidia.com/mig-3g.40gb", "1", "h100"},
	} {
		r := schema.Resources{Accelerators: map[string]int{tc.accelerator: 1}, AcceleratorShare: tc.share}
		s := spec(int64(7310+i), 1, e.ns[0], r)
		launch(t, p, s)
		pod, err := cp.Client.CoreV1().Pods(e.ns[0]).Get(ctx, podName(s.Name, 0), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res := pod.Spec.Containers[0].Resources
		req, lim := res.Requests[tc.resource], res.Limits[tc.resource]
		if req.String() != tc.units || lim.String() != tc.units {
			t.Errorf("%s:%g: %s request %s, limit %s; want %s", tc.accelerator, tc.share, tc.resource, req.String(), lim.String(), tc.units)
		}
		if _, whole := res.Requests[GPUResource]; whole {
			t.Errorf("%s:%g also asks a whole GPU: %v", tc.accelerator, tc.share, res.Requests)
		}
		if got := pod.Spec.NodeSelector[DefaultAcceleratorLabel]; got != tc.label {
			t.Errorf("%s:%g: node selector %s=%q, want %q", tc.accelerator, tc.share, DefaultAcceleratorLabel, got, tc.label)
		}
	}
}

// A fraction the cluster cannot give is refused before any pod is made,
// naming the fraction, the accelerator and per_gpu, or the missing config.
func TestFractionalGPURefusals(t *testing.T) {
	e := newEnv(t, 1)
	p := e.provider(t, func(c *Config) {
		c.SharedGPUs = map[string]SharedGPU{"A100": {Resource: "nvidia.com/gpu.shared", PerGPU: 2}}
	})
	for i, tc := range []struct {
		r    schema.Resources
		want string
	}{
		{schema.Resources{Accelerators: map[string]int{"A100": 1}, AcceleratorShare: 0.25},
			"resources.accelerators: A100:0.25 is 0.5 of nvidia.com/gpu.shared's 2 shares per GPU (kubernetes.shared_gpus.A100.per_gpu), not a whole number; ask a multiple of 1/2 of a GPU"},
		{schema.Resources{Accelerators: map[string]int{"L4": 1}, AcceleratorShare: 0.5},
			"resources.accelerators: L4:0.5 asks a fraction of a GPU, and kubernetes.shared_gpus names no shared resource for L4"},
	} {
		_, err := p.Launch(testContext(t), spec(int64(7320+i), 1, e.ns[0], tc.r))
		if err == nil || !strings.Contains(err.Error(), tc.want) || provision.Classify(err) != provision.ClassPrechecks {
			t.Errorf("Launch with %+v: %v, want a prechecks error with %q", tc.r, err, tc.want)
		}
	}
	pods, _ := cp.Client.CoreV1().Pods(e.ns[0]).List(testContext(t), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("refused launches left %d pods", len(pods.Items))
	}
}
