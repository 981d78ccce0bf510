package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sortie/provision"
	"sortie/schema"
	"sortie/strategy/clocktest"
)

// TestPodsCarryTheRequest checks what a launch asks of Kubernetes: the
// image, requests and limits, the GPU and its node label, the spot node
// selector and tolerations, ports, sortie's labels, the grace period, the
// termination message, and the parent ConfigMap owning every pod.
func TestPodsCarryTheRequest(t *testing.T) {
	e := newEnv(t, 1)
	spotTol := corev1.Toleration{Key: "cloud.google.com/gke-spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	p := e.provider(t, func(c *Config) {
		c.SpotNodeSelector = map[string]string{"cloud.google.com/gke-spot": "true"}
		c.SpotTolerations = []corev1.Toleration{spotTol}
	})
	r := schema.Resources{CPUs: "2+", Memory: "4", Accelerators: map[string]int{"A100": 2}, UseSpot: true,
		ImageID: "docker:python:3.12", Ports: []string{"8080", "9000-9001"}, Labels: map[string]string{"team": "ml"},
		JobRecovery: &schema.JobRecovery{TerminationGrace: schema.Duration(45 * time.Second)}}
	s := spec(7301, 2, e.ns[0], r)
	s.AvoidHosts = []string{"gpu-2", "gpu-7"}
	c := launch(t, p, s)
	ctx := testContext(t)
	parent, err := cp.Client.CoreV1().ConfigMaps(e.ns[0]).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("parent ConfigMap: %v", err)
	}
	for rank := range 2 {
		pod, err := cp.Client.CoreV1().Pods(e.ns[0]).Get(ctx, podName(s.Name, rank), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(pod.UID) != c.Nodes[rank].InstanceID {
			t.Errorf("node %d instance id %s, pod uid %s", rank, c.Nodes[rank].InstanceID, pod.UID)
		}
		if pod.Spec.NodeName == "" || c.Nodes[rank].Host != pod.Spec.NodeName {
			t.Errorf("node %d host %q, pod's node %q", rank, c.Nodes[rank].Host, pod.Spec.NodeName)
		}
		// Quarantined nodes are the scheduler's last choice, not refused.
		avoid := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"gpu-2", "gpu-7"}}}}}}}}
		if diff := cmp.Diff(avoid, pod.Spec.Affinity); diff != "" {
			t.Errorf("pod %d affinity (-want +got):\n%s", rank, diff)
		}
		want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: s.Name, UID: parent.UID}}
		if diff := cmp.Diff(want, pod.OwnerReferences); diff != "" {
			t.Errorf("pod %d owner references (-want +got):\n%s", rank, diff)
		}
		for k, v := range map[string]string{"sortie-job": "1", "sortie-task": "0", "sortie-attempt": "1",
			"sortie-node-rank": string(rune('0' + rank)), "sortie-managed": "true", "sortie-cluster": s.Name, "team": "ml"} {
			if pod.Labels[k] != v {
				t.Errorf("pod %d label %s = %q, want %q", rank, k, pod.Labels[k], v)
			}
		}
		spec := pod.Spec
		if spec.RestartPolicy != corev1.RestartPolicyNever || spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds != 45 {
			t.Errorf("pod %d restart policy %s, grace %v; want Never, 45", rank, spec.RestartPolicy, spec.TerminationGracePeriodSeconds)
		}
		if diff := cmp.Diff(map[string]string{DefaultAcceleratorLabel: "a100", "cloud.google.com/gke-spot": "true"}, spec.NodeSelector); diff != "" {
			t.Errorf("node selector (-want +got):\n%s", diff)
		}
		// The apiserver's DefaultTolerationSeconds adds its own after ours.
		if len(spec.Tolerations) == 0 || !cmp.Equal(spotTol, spec.Tolerations[0]) {
			t.Errorf("tolerations %+v, want the spot one first: %+v", spec.Tolerations, spotTol)
		}
		ctr := spec.Containers[0]
		if ctr.Image != "python:3.12" || ctr.TerminationMessagePath != TerminationLog || ctr.Command[0] != "/bin/sh" {
			t.Errorf("container image %q, termination message %q, command %q", ctr.Image, ctr.TerminationMessagePath, ctr.Command)
		}
		q := func(l corev1.ResourceList, n corev1.ResourceName) string {
			v, ok := l[n]
			if !ok {
				return "-"
			}
			return v.String()
		}
		got := []string{q(ctr.Resources.Requests, corev1.ResourceCPU), q(ctr.Resources.Limits, corev1.ResourceCPU),
			q(ctr.Resources.Requests, corev1.ResourceMemory), q(ctr.Resources.Limits, corev1.ResourceMemory),
			q(ctr.Resources.Requests, GPUResource), q(ctr.Resources.Limits, GPUResource)}
		if diff := cmp.Diff([]string{"2", "-", "4Gi", "4Gi", "2", "2"}, got); diff != "" {
			t.Errorf("requests and limits cpu, memory, gpu (-want +got):\n%s", diff)
		}
		var ports []int32
		for _, cp := range ctr.Ports {
			ports = append(ports, cp.ContainerPort)
		}
		if diff := cmp.Diff([]int32{8080, 9000, 9001}, ports); diff != "" {
			t.Errorf("ports (-want +got):\n%s", diff)
		}
		env := map[string]string{}
		for _, v := range ctr.Env {
			env[v.Name] = v.Value
		}
		if env["SORTIE_NODE_RANK"] != string(rune('0'+rank)) || env["SORTIE_NUM_NODES"] != "2" || env["SKYPILOT_NODE_RANK"] != env["SORTIE_NODE_RANK"] {
			t.Errorf("pod %d env %v", rank, env)
		}
	}
}

// TestOnDemandPodsStayOffSpotNodesWithTheDefaultGrace: a pod without
// use_spot gets none of the spot node selector and tolerations, even where
// they are configured; a task that gives no termination_grace gets the
// documented 30 s grace period; no accelerator, no node selector at all.
func TestOnDemandPodsStayOffSpotNodesWithTheDefaultGrace(t *testing.T) {
	e := newEnv(t, 1)
	p := e.provider(t, func(c *Config) {
		c.SpotNodeSelector = map[string]string{"cloud.google.com/gke-spot": "true"}
		c.SpotTolerations = []corev1.Toleration{{Key: "cloud.google.com/gke-spot", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	})
	s := spec(7309, 1, e.ns[0], schema.Resources{CPUs: "1"})
	launch(t, p, s)
	pod, err := cp.Client.CoreV1().Pods(e.ns[0]).Get(testContext(t), podName(s.Name, 0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.NodeSelector) != 0 {
		t.Errorf("on-demand pod's node selector %v, want none", pod.Spec.NodeSelector)
	}
	if pod.Spec.Affinity != nil {
		t.Errorf("affinity %+v with no node to avoid, want none", pod.Spec.Affinity)
	}
	// The apiserver's DefaultTolerationSeconds adds its own (not-ready,
	// unreachable), which are no spot ones.
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == "cloud.google.com/gke-spot" {
			t.Errorf("on-demand pod tolerates the spot taint: %+v", pod.Spec.Tolerations)
		}
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || *g != 30 {
		got := "unset"
		if g != nil {
			got = fmt.Sprintf("%d s", *g)
		}
		t.Errorf("grace period %s, want the default 30 s (job_recovery.termination_grace unset)", got)
	}
}

func TestBadRequestsAreRefusedNamingTheField(t *testing.T) {
	e := newEnv(t, 1)
	p := e.provider(t)
	for _, tc := range []struct {
		r    schema.Resources
		want string
	}{
		{schema.Resources{ImageID: "ami-123"}, `resources.image_id: "ami-123" is not a container image; on kubernetes write docker:IMAGE`},
		{schema.Resources{InstanceType: "m6i.large"}, `resources.instance_type: "m6i.large" means nothing to a pod`},
		{schema.Resources{Accelerators: map[string]int{"A100": 1, "H100": 1}}, "resources.accelerators: A100, H100: a pod asks for one GPU model"},
		{schema.Resources{Labels: map[string]string{"bad key!": "x"}}, "resources.labels.bad key!"},
		{schema.Resources{Labels: map[string]string{"sortie-job": "x"}}, "resources.labels.sortie-job"},
		{schema.Resources{Ports: []string{"1-1000"}}, "resources.ports: 1-1000 is more than 100 ports"},
		{schema.Resources{Zone: "elsewhere"}, `namespace "elsewhere" is not one sortie may use`},
	} {
		s := spec(7302, 1, e.ns[0], tc.r)
		if tc.r.Zone != "" {
			s.Placement.Zone = tc.r.Zone
		}
		_, err := p.Launch(testContext(t), s)
		if err == nil || !strings.Contains(err.Error(), tc.want) || provision.Classify(err) != provision.ClassPrechecks {
			t.Errorf("Launch with %+v: %v (%s), want a prechecks error with %q", tc.r, err, provision.Classify(err), tc.want)
		}
	}
	pods, _ := cp.Client.CoreV1().Pods(e.ns[0]).List(testContext(t), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("refused launches left %d pods", len(pods.Items))
	}
}

// TestUnschedulableIsCapacityOnlyAfterTheProvisionTimeout: a pod no node
// fits is waited for until kubernetes.provision_timeout has passed since
// the scheduler said so, then the launch is a capacity error and the
// cluster is gone.
func TestUnschedulableIsCapacityOnlyAfterTheProvisionTimeout(t *testing.T) {
	e := newEnv(t, 1)
	e.kubelet.Full(e.ns[0], true)
	clock := clocktest.New(time.Now())
	p := e.provider(t, func(c *Config) { c.Now, c.ProvisionTimeout = clock.Now, 5*time.Minute })
	s := spec(7303, 2, e.ns[0], schema.Resources{})
	waiting := make(chan string, 100)
	ctx := provision.WithProgress(testContext(t), func(msg string) {
		select {
		case waiting <- msg:
		default:
		}
	})
	done := make(chan error, 1)
	go func() { _, err := p.Launch(ctx, s); done <- err }()
	for msg := range waiting {
		if strings.Count(msg, "Unschedulable") == 2 {
			break
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Launch returned %v before the provision timeout passed", err)
	case <-time.After(200 * time.Millisecond):
	}
	clock.Advance(6 * time.Minute)
	err := <-done
	if provision.Classify(err) != provision.ClassCapacity || !strings.Contains(err.Error(), "unschedulable for over 5m0s") {
		t.Fatalf("Launch: %v (%s), want a capacity error naming the provision timeout", err, provision.Classify(err))
	}
	waitGone(t, p, s.Name)
}

// waitGone waits until the cluster's pods and parent are deleted.
func waitGone(t *testing.T, p *Provider, name string) {
	t.Helper()
	ctx := testContext(t)
	for {
		m, err := p.Status(ctx, []string{name})
		if err == nil && m[name] == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("cluster %s still there: %+v, %v", name, m[name], err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestAnImageThatCannotBePulledIsPrechecks: no retry pulls an image that
// is not there.
func TestAnImageThatCannotBePulledIsPrechecks(t *testing.T) {
	e := newQuietEnv(t, 1) // no kubelet serves the pods: this test plays it
	p := e.provider(t)
	s := spec(7304, 1, e.ns[0], schema.Resources{ImageID: "docker:no/such:image"})
	done := make(chan error, 1)
	go func() { _, err := p.Launch(testContext(t), s); done <- err }()
	ctx := testContext(t)
	for {
		err := e.kubelet.Waiting(ctx, e.ns[0], podName(s.Name, 0), "ErrImagePull", "pull access denied for no/such")
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod never created: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The pod is bound to the node: its deletion ends when the kubelet,
	// played here, says its containers stopped.
	go func() {
		for ctx.Err() == nil {
			pod, err := cp.Client.CoreV1().Pods(e.ns[0]).Get(ctx, podName(s.Name, 0), metav1.GetOptions{})
			if err != nil {
				return
			}
			if pod.DeletionTimestamp != nil {
				e.kubelet.FinishDeletion(ctx, e.ns[0], pod.Name)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	err := <-done
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "cannot pull its image: ErrImagePull: pull access denied") {
		t.Fatalf("Launch: %v (%s), want a prechecks error naming the pull", err, provision.Classify(err))
	}
	waitGone(t, p, s.Name)
}

// TestEvictionAndDeletionArePreemptions: a pod the cluster evicts
// (the eviction API, as a drain does) or deletes is a preempted node.
func TestEvictionAndDeletionArePreemptions(t *testing.T) {
	e := newEnv(t, 1)
	p := e.provider(t)
	s := spec(7305, 2, e.ns[0], schema.Resources{})
	launch(t, p, s)
	ctx := testContext(t)
	err := cp.Client.CoreV1().Pods(e.ns[0]).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: podName(s.Name, 0), Namespace: e.ns[0]}})
	if err != nil {
		t.Fatalf("evict: %v", err)
	}
	if err := cp.Client.CoreV1().Pods(e.ns[0]).Delete(ctx, podName(s.Name, 1), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := p.Status(ctx, []string{s.Name})
		if err != nil {
			t.Fatal(err)
		}
		c := m[s.Name]
		if c != nil && len(c.Nodes) == 2 && c.Nodes[0].State == provision.NodePreempted && c.Nodes[1].State == provision.NodePreempted {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("nodes not preempted: %s", describe(c))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p, s.Name)
}

// TestTaskStatusAndLogs: StartTask hands the task to the pods through the
// parent ConfigMap and a Secret it owns; the exit code and the phase come
// from the container status and its termination message; logs from the
// pod log API (served by the test's kubelet, through the apiserver).
func TestTaskStatusAndLogs(t *testing.T) {
	e := newEnv(t, 1)
	p := e.provider(t)
	s := spec(7306, 2, e.ns[0], schema.Resources{})
	c := launch(t, p, s)
	ctx := testContext(t)
	st, err := p.TaskStatus(ctx, c, 0)
	if err != nil || st.Started || st.Done {
		t.Fatalf("TaskStatus before StartTask = %+v, %v; want nothing started", st, err)
	}
	task := provision.Task{Setup: "pip install x", Run: "python train.py", Env: map[string]string{"TOKEN": "it's secret", "SORTIE_JOB_ID": "7306"},
		Files: []provision.File{{Path: "train.py", Mode: 0o644, Data: []byte("print(1)\n")}, {Path: "/data/x.bin", Mode: 0o600, Data: []byte{0, 1, 2}}}}
	big := task
	big.Files = []provision.File{{Path: "big", Data: make([]byte, MaxFiles+1)}}
	if err := p.StartTask(ctx, c, big); provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "workdir and file_mounts: over 512 KiB") {
		t.Fatalf("StartTask with files over MaxFiles: %v, want a prechecks error naming the limit", err)
	}
	if err := p.StartTask(ctx, c, task); err != nil {
		t.Fatal(err)
	}
	if err := p.StartTask(ctx, c, provision.Task{Run: "other"}); err != nil {
		t.Fatalf("second StartTask: %v", err)
	}
	parent, err := cp.Client.CoreV1().ConfigMaps(e.ns[0]).Get(ctx, s.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{KeyNumNodes: "2", KeySetup: "pip install x", KeyRun: "python train.py", KeyStart: "1", KeyNodeIPs: c.Nodes[0].IP + "\n" + c.Nodes[1].IP,
		KeyFiles: "644 file.0 train.py\n600 file.1 /data/x.bin\n"}
	if diff := cmp.Diff(want, parent.Data); diff != "" {
		t.Errorf("parent data (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]byte{"file.0": []byte("print(1)\n"), "file.1": {0, 1, 2}}, parent.BinaryData); diff != "" {
		t.Errorf("parent binary data (-want +got):\n%s", diff)
	}
	secret, err := cp.Client.CoreV1().Secrets(e.ns[0]).Get(ctx, secretName(s.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(secret.Data[KeyEnv]); got != "export SORTIE_JOB_ID='7306'\nexport TOKEN='it'\\''s secret'\n" {
		t.Errorf("secret env = %q", got)
	}
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != parent.UID {
		t.Errorf("secret owner references %+v, want the parent %s", secret.OwnerReferences, parent.UID)
	}
	if err := e.kubelet.Exit(ctx, e.ns[0], podName(s.Name, 0), 29, PhaseRun); err != nil {
		t.Fatal(err)
	}
	if err := e.kubelet.Exit(ctx, e.ns[0], podName(s.Name, 1), 3, PhaseSetup); err != nil {
		t.Fatal(err)
	}
	for rank, want := range []provision.TaskStatus{{Started: true, Done: true, ExitCode: 29, Phase: PhaseRun}, {Started: true, Done: true, ExitCode: 3, Phase: PhaseSetup}} {
		for {
			st, err = p.TaskStatus(ctx, c, rank)
			if err != nil {
				t.Fatal(err)
			}
			if st.Done || ctx.Err() != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if st != want {
			t.Errorf("node %d TaskStatus = %+v, want %+v", rank, st, want)
		}
	}
	// A pod whose task ended is a node still there, not a lost one.
	m, err := p.Status(ctx, []string{s.Name})
	if err != nil || m[s.Name].Nodes[0].State != provision.NodeRunning {
		t.Errorf("Status after the task ended: %v, %v; want node 0 running", describe(m[s.Name]), err)
	}

	e.kubelet.SetLog(e.ns[0], podName(s.Name, 0), ContainerName, "setup done\ntraining\n")
	log, err := p.ReadTaskLog(ctx, c, 0, 0, 0)
	if err != nil || string(log) != "setup done\ntraining\n" {
		t.Fatalf("ReadLog = %q, %v", log, err)
	}
	log, err = p.ReadTaskLog(ctx, c, 0, int64(len("setup done\n")), 0)
	if err != nil || string(log) != "training\n" {
		t.Errorf("ReadLog from an offset = %q, %v", log, err)
	}
	log, err = p.ReadTaskLog(ctx, c, 0, 2, 5)
	if err != nil || string(log) != "tup d" {
		t.Errorf("ReadLog of at most 5 bytes from 2 = %q, %v", log, err)
	}
	if _, err := p.ReadTaskLog(ctx, c, 1, 0, 0); err == nil {
		t.Error("ReadLog of a container the kubelet has no log of: no error")
	}

	// A task sortie stops is its pod deleted: the node is terminated by
	// sortie from then on, never a preemption.
	if err := p.StopTask(ctx, c, 1); err != nil {
		t.Fatal(err)
	}
	for {
		m, err = p.Status(ctx, []string{s.Name})
		if err != nil {
			t.Fatal(err)
		}
		if n := m[s.Name].Nodes[1]; n.State != provision.NodeRunning || ctx.Err() != nil {
			if n.State != provision.NodeTerminated || m[s.Name].Nodes[0].State != provision.NodeRunning {
				t.Errorf("after StopTask of node 1: %s; want node 0 running, node 1 terminated", describe(m[s.Name]))
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.StopTask(ctx, c, 1); err != nil {
		t.Errorf("StopTask of a pod gone already: %v", err)
	}
}

// TestRunnerRefusesCommands: nothing but the task runs in a pod.
func TestRunnerRefusesCommands(t *testing.T) {
	e := newEnv(t, 1)
	p := e.provider(t)
	c := &provision.Cluster{Name: "sortie-1-0-1", Nodes: []provision.Node{{}}}
	r, err := p.Runner(context.Background(), c, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Exec(context.Background(), "echo hi", nil)
	var pe *provision.Error
	if !errors.As(err, &pe) || pe.Class != provision.ClassPrechecks || !strings.Contains(err.Error(), "runs the task as its container command") {
		t.Errorf("Exec = %v, want a prechecks error saying why", err)
	}
	if _, err := p.Runner(context.Background(), c, 1); err == nil {
		t.Error("Runner of a node the cluster lacks: no error")
	}
}

// TestPodsRunTheTask runs the pods' container command for real, as
// processes of this machine (the test's kubelet maps the pod's volumes
// onto folders): the task handed over reaches both pods with its files,
// each pod sees its own rank and the nodes' addresses, the exit codes and
// the phase come back through the pod status, the output through the pod
// log API.
func TestPodsRunTheTask(t *testing.T) {
	e := newQuietEnv(t, 1)
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- e.kubelet.ServeProcesses(ctx, e.ns[0], t.TempDir()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kubelet: %v", err)
		}
	})
	p := e.provider(t)
	s := spec(7307, 2, e.ns[0], schema.Resources{})
	c := launch(t, p, s)
	task := provision.Task{
		Setup: `test -f train.sh || exit 3`,
		Run:   `echo "rank $SORTIE_NODE_RANK of $SORTIE_NUM_NODES, job $SORTIE_JOB_ID, ips $(echo $SORTIE_NODE_IPS)"; sh train.sh`,
		Env:   map[string]string{"SORTIE_JOB_ID": "7307"},
		Files: []provision.File{{Path: "train.sh", Mode: 0o644, Data: []byte(`[ "$SORTIE_NODE_RANK" = 1 ] && exit 29; echo trained`)}},
	}
	if err := p.StartTask(ctx, c, task); err != nil {
		t.Fatal(err)
	}
	want := []provision.TaskStatus{{Started: true, Done: true, ExitCode: 0, Phase: PhaseRun}, {Started: true, Done: true, ExitCode: 29, Phase: PhaseRun}}
	ips := c.Nodes[0].IP + " " + c.Nodes[1].IP
	wantLogs := []string{"rank 0 of 2, job 7307, ips " + ips + "\ntrained\n", "rank 1 of 2, job 7307, ips " + ips + "\n"}
	for rank := range 2 {
		var st provision.TaskStatus
		for {
			var err error
			if st, err = p.TaskStatus(ctx, c, rank); err != nil {
				t.Fatal(err)
			}
			if st.Done || ctx.Err() != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if st != want[rank] {
			t.Errorf("node %d: %+v, want %+v", rank, st, want[rank])
		}
		if log, err := p.ReadTaskLog(ctx, c, rank, 0, 0); err != nil || string(log) != wantLogs[rank] {
			t.Errorf("node %d log %q, %v; want %q", rank, log, err, wantLogs[rank])
		}
	}

	// A setup that fails is told apart by the termination message.
	s = spec(7308, 1, e.ns[0], schema.Resources{})
	c = launch(t, p, s)
	if err := p.StartTask(ctx, c, provision.Task{Setup: "exit 3", Run: "echo never"}); err != nil {
		t.Fatal(err)
	}
	for {
		st, err := p.TaskStatus(ctx, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		if st.Done || ctx.Err() != nil {
			if st != (provision.TaskStatus{Started: true, Done: true, ExitCode: 3, Phase: PhaseSetup}) {
				t.Errorf("setup failure: %+v", st)
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}
