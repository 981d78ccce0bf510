package smoke_tests

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sortie/controller/clouds/all"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/provision"
	"sortie/provision/kubernetes"
	"sortie/provision/kubernetes/kubetest"
	"sortie/schema"
)

// The control plane the Kubernetes smoke tests share: started by the
// first of them, stopped by TestMain.
var (
	kubeOnce sync.Once
	kubeCP   *kubetest.ControlPlane
	kubeErr  error
)

func controlPlane(t *testing.T) *kubetest.ControlPlane {
	t.Helper()
	kubeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		kubeCP, kubeErr = kubetest.Start(ctx)
	})
	if kubeErr != nil {
		t.Fatalf("start the Kubernetes control plane (make kube-control-plane builds it): %v", kubeErr)
	}
	return kubeCP
}

// stopControlPlane stops the shared control plane, if a test started it.
func stopControlPlane() {
	if kubeCP != nil {
		kubeCP.Stop()
	}
}

// kubeContext is the one context of the test kubeconfig.
const kubeContext = "smoke"

// kubeEnv is a user whose kubeconfig reaches the test's apiserver, with
// two namespaces sortie may use, whose pods one kubelet runs as processes
// of this machine.
type kubeEnv struct {
	*env
	cp      *kubetest.ControlPlane
	ns      []string
	kubelet *kubetest.Kubelet
}

func newKubeEnv(t *testing.T) *kubeEnv {
	t.Helper()
	cp := controlPlane(t)
	e := newEnv(t)
	k := &kubeEnv{env: e, cp: cp, ns: []string{cp.Namespace(t), cp.Namespace(t)}}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.Kubeconfig(kubeconfig, cp.Token, k.ns[0], kubeContext); err != nil {
		t.Fatal(err)
	}
	k.kubelet = cp.StartKubelet(t, "node-"+k.ns[0])
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	pods := t.TempDir()
	for _, ns := range k.ns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := k.kubelet.ServeProcesses(ctx, ns, pods); err != nil {
				t.Errorf("kubelet: %v", err)
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	e.config(fmt.Sprintf(`
kubernetes:
  kubeconfig: %s
  allowed_namespaces: [%s, %s]
  provision_timeout: 1s
  launch_timeout: 60s
`, kubeconfig, k.ns[0], k.ns[1]))
	return k
}

// live lists sortie's objects left in the env's namespaces: pods,
// ConfigMaps and Secrets labelled sortie-managed, waiting a while for
// deletions under way to end.
func (k *kubeEnv) live() []string {
	var out []string
	for deadline := time.Now().Add(20 * time.Second); ; {
		out = nil
		ctx := context.Background()
		sel := metav1.ListOptions{LabelSelector: provision.TagManaged + "=true"}
		for _, ns := range k.ns {
			pods, err := k.cp.Client.CoreV1().Pods(ns).List(ctx, sel)
			if err != nil {
				k.t.Fatal(err)
			}
			for _, p := range pods.Items {
				out = append(out, "pod "+ns+"/"+p.Name)
			}
			cms, err := k.cp.Client.CoreV1().ConfigMaps(ns).List(ctx, sel)
			if err != nil {
				k.t.Fatal(err)
			}
			for _, c := range cms.Items {
				out = append(out, "configmap "+ns+"/"+c.Name)
			}
			secrets, err := k.cp.Client.CoreV1().Secrets(ns).List(ctx, sel)
			if err != nil {
				k.t.Fatal(err)
			}
			for _, s := range secrets.Items {
				out = append(out, "secret "+ns+"/"+s.Name)
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			sort.Strings(out)
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestKubernetesSpotJobEndToEnd runs the scenario every cloud runs on pods
// of a real apiserver: the first namespace the task's ordered placements
// name has no room (pods left Unschedulable past provision_timeout), so
// the job moves to the second;
// its pod is evicted (the eviction API, as a drain or a spot node's loss
// does) and the job recovers on new pods; exit code 29 restarts it, on a
// new cluster; it succeeds, and no pod, ConfigMap or Secret is left.
func TestKubernetesSpotJobEndToEnd(t *testing.T) {
	k := newKubeEnv(t)
	spotScenario(t, k.env, spotCase{
		resources:  fmt.Sprintf("  cloud: kubernetes\n  cpus: 1+\n  ordered:\n  - {zone: %s}\n  - {zone: %s}\n", k.ns[0], k.ns[1]),
		full:       func(ns string) { k.kubelet.Full(ns, true) },
		fullZone:   k.ns[0],
		firstZone:  k.ns[1],
		newCluster: true,
		interrupt: func(first contract.AttemptView) {
			ns, pod := deref(first.Zone), first.Cluster+"-0"
			err := k.cp.Client.CoreV1().Pods(ns).EvictV1(context.Background(),
				&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns}})
			if err != nil {
				t.Fatalf("evict %s/%s: %v", ns, pod, err)
			}
		},
		recovered: func(first, next contract.AttemptView) {
			if z := deref(next.Zone); z != k.ns[1] {
				t.Errorf("recovered in namespace %s, want %s (%s has no room)", z, k.ns[1], k.ns[0])
			}
			if next.Cluster == first.Cluster {
				t.Errorf("recovered on the evicted cluster %s", first.Cluster)
			}
		},
		live: k.live,
	})
}

// TestKubernetesControllerKilledReattaches kills the controller with -9
// while a job's pod runs its task: the next controller finds the pod,
// records its exit code once, deletes the orphan cluster no attempt owns,
// and leaves no pod.
func TestKubernetesControllerKilledReattaches(t *testing.T) {
	k := newKubeEnv(t)
	d := killedControllerScenario(t, k.env, "{cloud: kubernetes, cpus: 1+}", func() string {
		cfg, err := config.Load(k.home, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		kc := all.KubernetesConfig(cfg)
		kc.Logger = slog.New(slog.DiscardHandler)
		p, err := kubernetes.New(context.Background(), kc)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		return launchOrphanOn(t, p, schema.Placement{Cloud: kubernetes.CloudName, Region: kubeContext, Zone: k.ns[1]},
			schema.Resources{Cloud: kubernetes.CloudName})
	}, k.live)
	if got := codes(d); len(got) != 1 || len(got[0]) != 1 || got[0][0] != 0 {
		t.Errorf("exit codes %v, want one attempt's [0]", got)
	}
	if logs := k.must("jobs", "logs", fmt.Sprint(d.ID)).stdout; !strings.Contains(logs, "released") {
		t.Errorf("kept logs after the pods are gone: %q", logs)
	}
}

// TestKubernetesWorkdirAndFileMounts: a small workdir and file_mounts
// reach the pod (through its parent ConfigMap), the task runs in the
// workdir; files past the limit end the job FAILED_PRECHECKS naming the
// field and the limit.
func TestKubernetesWorkdirAndFileMounts(t *testing.T) {
	k := newKubeEnv(t)
	k.write("code/train.sh", "echo training with $(cat config.txt)\n")
	k.write("code/config.txt", "lr=0.1\n")
	k.write("data.csv", "a,b\n1,2\n")
	mount := filepath.Join(t.TempDir(), "mnt", "data.csv")
	f := k.write("task.yaml", `
resources: {cloud: kubernetes}
workdir: code
file_mounts:
  `+mount+`: data.csv
  extra/data.csv: data.csv
setup: test -f train.sh
run: |
  sh train.sh
  cat extra/data.csv `+mount+`
`)
	id := k.launch(f)
	d := k.waitStatus(id, "SUCCEEDED")
	logs := k.must("jobs", "logs", fmt.Sprint(id)).stdout
	if !strings.Contains(logs, "training with lr=0.1") || strings.Count(logs, "1,2") != 2 {
		t.Errorf("logs: %q", logs)
	}
	if got := codes(d); len(got) != 1 || got[0][0] != 0 {
		t.Errorf("exit codes %v", got)
	}

	k.write("big/blob", strings.Repeat("x", kubernetes.MaxFiles+1))
	f = k.write("big.yaml", "resources: {cloud: kubernetes}\nworkdir: big\nrun: echo never\n")
	id = k.launch(f)
	d = k.waitStatus(id, "FAILED_PRECHECKS")
	if r := deref(d.FailureReason); !strings.Contains(r, "workdir") || !strings.Contains(r, "512 KiB") {
		t.Errorf("failure reason %q; want it to name workdir and the 512 KiB limit", r)
	}
	k.must("controller", "stop")
	if left := k.live(); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}
