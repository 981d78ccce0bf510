package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/schema"
)

// A fraction of one accelerator on Kubernetes is refused at launch and at
// a dry run, naming why, unless kubernetes.shared_gpus names a shared
// resource for it of which the fraction is a whole number of units.
func TestFractionalAcceleratorNeedsASharedResource(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	root := project(t, map[string]string{
		"half.yaml":    "resources: {cloud: kubernetes, accelerators: A100:0.5}\nrun: nvidia-smi\n",
		"quarter.yaml": "resources: {cloud: kubernetes, accelerators: A100:0.25}\nrun: nvidia-smi\n",
	})
	half := contract.LaunchRequest{File: filepath.Join(root, "half.yaml"), Dir: root}
	want := `resources.accelerators: "A100:0.5" asks a fraction of a GPU, and kubernetes.shared_gpus in config.yaml names no shared resource for A100`
	_, err := s.Launch(ctx, half)
	if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("launch with no shared resource: %q, want %q", got, want)
	}
	_, err = s.Plan(ctx, half)
	if got := problems(t, err); len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("dry run with no shared resource: %q, want %q", got, want)
	}

	s.Config.Kubernetes.SharedGPUs = map[string]config.KubernetesSharedGPU{"a100": {Resource: "nvidia.com/gpu.shared", PerGPU: 2}}
	_, err = s.Plan(ctx, contract.LaunchRequest{File: filepath.Join(root, "quarter.yaml"), Dir: root})
	want = `resources.accelerators: "A100:0.25" is 0.5 of the 2 units of nvidia.com/gpu.shared one GPU is (kubernetes.shared_gpus.a100.per_gpu), not a whole number; ask a multiple of 1/2 of a GPU`
	if got := problems(t, err); len(got) != 1 || got[0] != want {
		t.Errorf("dry run of a quarter on halves: %q, want %q", got, want)
	}
	if _, err := s.Plan(ctx, half); err != nil && strings.Contains(err.Error(), "shared_gpus") {
		t.Errorf("dry run of a half on halves: %v", err)
	}
	// --cloud moves the task: the fraction is refused on a cloud of whole GPUs.
	moved := half
	moved.Cloud = "aws"
	_, err = s.Plan(ctx, moved)
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], "which aws cannot give") {
		t.Errorf("dry run with --cloud aws: %q, want the fraction refused on aws", got)
	}
}

// The plan and the queue show the fraction the task asks, not a whole GPU.
func TestFractionalAcceleratorIsShownAsAsked(t *testing.T) {
	r := schema.Resources{Cloud: "kubernetes", Accelerators: map[string]int{"A100": 1}, AcceleratorShare: 0.5}
	if got := acceleratorsOf(r); got != "A100:0.5" {
		t.Errorf("plan shows %q, want A100:0.5", got)
	}
	if got := resourcesOf(&schema.Task{Resources: r}).String(); got != "1x[A100:0.5]" {
		t.Errorf("queue shows %q, want 1x[A100:0.5]", got)
	}
}
