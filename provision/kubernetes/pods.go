package kubernetes

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"sortie/provision"
	"sortie/schema"
)

// podName is the name of node rank's pod of cluster.
func podName(cluster string, rank int) string { return fmt.Sprintf("%s-%d", cluster, rank) }

// secretName is the name of the Secret holding cluster's task environment.
func secretName(cluster string) string { return cluster + "-env" }

// clusterLabels are the labels of every object of spec's cluster: sortie's
// tags, then the task's own labels.
func clusterLabels(spec provision.ClusterSpec) map[string]string {
	l := maps.Clone(spec.Resources.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, spec.Tags)
	l[provision.TagManaged] = "true"
	l[provision.TagCluster] = spec.Name
	return l
}

// checkLabels refuses task labels Kubernetes would refuse, or that clash
// with sortie's own.
func checkLabels(labels map[string]string) error {
	return provision.CheckLabels(CloudName, labels, nil, func(k, v string) (string, string) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return "is not a label key: " + strings.Join(errs, "; "), "use [prefix/]name, the name of letters, digits, -, _ and ."
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return "is not a label value: " + strings.Join(errs, "; "), "use at most 63 letters, digits, -, _ and ."
		}
		return "", ""
	})
}

// parentFor is the ConfigMap that owns spec's pods; a task that starts
// writes its script into it.
func parentFor(spec provision.ClusterSpec) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: spec.Placement.Zone, Labels: clusterLabels(spec)},
		Data:       map[string]string{KeyNumNodes: strconv.Itoa(spec.NumNodes)},
	}
}

// ownedBy makes parent the owner of o, so that deleting parent (with a
// garbage collector running) deletes o.
func ownedBy(parent *corev1.ConfigMap) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: parent.Name, UID: parent.UID}}
}

// podFor is node rank's pod of spec's cluster under parent.
func (p *Provider) podFor(spec provision.ClusterSpec, parent *corev1.ConfigMap, rank int) (*corev1.Pod, error) {
	r := spec.Resources
	image := p.cfg.Image
	if r.ImageID != "" {
		img, ok := strings.CutPrefix(r.ImageID, "docker:")
		if !ok || strings.TrimSpace(img) == "" {
			return nil, provision.Prechecks(fmt.Errorf("resources.image_id: %q is not a container image; on kubernetes write docker:IMAGE (e.g. docker:python:3.12), or leave it out for %s",
				r.ImageID, image))
		}
		image = strings.TrimSpace(img)
	}
	res, selector, err := p.resources(r)
	if err != nil {
		return nil, err
	}
	ports, err := provision.ParsePorts(r.Ports)
	if err != nil {
		return nil, err
	}
	var cports []corev1.ContainerPort
	for _, pr := range ports {
		if pr.To-pr.From >= 100 {
			return nil, provision.Prechecks(fmt.Errorf("resources.ports: %s is more than 100 ports; a pod lists each port it opens: name fewer", pr))
		}
		for port := pr.From; port <= pr.To; port++ {
			cports = append(cports, corev1.ContainerPort{ContainerPort: int32(port), Protocol: corev1.ProtocolTCP})
		}
	}
	var tolerations []corev1.Toleration
	if r.UseSpot {
		maps.Copy(selector, p.cfg.SpotNodeSelector)
		tolerations = append(tolerations, p.cfg.SpotTolerations...)
	}
	if len(selector) == 0 {
		selector = nil
	}
	labels := clusterLabels(spec)
	labels[provision.TagRank] = strconv.Itoa(rank)
	grace := int64(30)
	if r.JobRecovery != nil && r.JobRecovery.TerminationGrace > 0 {
		grace = int64(math.Ceil(r.JobRecovery.TerminationGrace.D().Seconds()))
	}
	env := []corev1.EnvVar{
		{Name: "SORTIE_NODE_RANK", Value: strconv.Itoa(rank)},
		{Name: "SKYPILOT_NODE_RANK", Value: strconv.Itoa(rank)},
		{Name: "SORTIE_NUM_NODES", Value: strconv.Itoa(spec.NumNodes)},
		{Name: "SKYPILOT_NUM_NODES", Value: strconv.Itoa(spec.NumNodes)},
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName(spec.Name, rank), Namespace: spec.Placement.Zone,
			Labels: labels, OwnerReferences: ownedBy(parent)},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			NodeSelector:                  selector,
			Tolerations:                   tolerations,
			Affinity:                      avoiding(spec.AvoidHosts),
			Hostname:                      podName(spec.Name, rank),
			Containers: []corev1.Container{{
				Name:                     ContainerName,
				Image:                    image,
				Command:                  []string{"/bin/sh", "-c", containerScript(TaskDir, SecretDir, TerminationLog, WorkDir)},
				Env:                      env,
				Resources:                res,
				Ports:                    cports,
				TerminationMessagePath:   TerminationLog,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "task", MountPath: TaskDir, ReadOnly: true},
					{Name: "secret", MountPath: SecretDir, ReadOnly: true},
					{Name: "workdir", MountPath: WorkDir},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "task", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: spec.Name}, Optional: ptr.To(true)}}},
				{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: secretName(spec.Name), Optional: ptr.To(true)}}},
				{Name: "workdir", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}, nil
}

// resources are the container's requests and limits for r's cpus,
// memory and accelerators, and the node labels a GPU model asks for.
// "N+" requests N; a fixed N also limits to N.
func (p *Provider) resources(r schema.Resources) (corev1.ResourceRequirements, map[string]string, error) {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	selector := map[string]string{}
	var problems []string
	for _, q := range []struct {
		field, value, unit string
		name               corev1.ResourceName
	}{{"resources.cpus", r.CPUs, "", corev1.ResourceCPU}, {"resources.memory", r.Memory, "Gi", corev1.ResourceMemory}} {
		if q.value == "" {
			continue
		}
		n, atLeast := strings.CutSuffix(q.value, "+")
		amount, err := resource.ParseQuantity(strings.TrimSpace(n) + q.unit)
		if err != nil || amount.Sign() <= 0 {
			problems = append(problems, fmt.Sprintf("%s: %q is not an amount a pod can request; use a positive number, or \"N+\"", q.field, q.value))
			continue
		}
		req[q.name] = amount
		if !atLeast {
			lim[q.name] = amount
		}
	}
	if len(r.Accelerators) > 1 {
		problems = append(problems, fmt.Sprintf("resources.accelerators: %s: a pod asks for one GPU model; name one (or list them under any_of)",
			strings.Join(slices.Sorted(maps.Keys(r.Accelerators)), ", ")))
	}
	for name, count := range r.Accelerators {
		if count <= 0 || len(r.Accelerators) > 1 {
			continue
		}
		if r.AcceleratorShare > 0 {
			res, units, problem := p.sharedGPU(name, r.AcceleratorShare)
			if problem != "" {
				problems = append(problems, "resources.accelerators: "+problem)
				continue
			}
			q := *resource.NewQuantity(int64(units), resource.DecimalSI)
			req[res], lim[res] = q, q
			selector[p.cfg.AcceleratorLabel] = strings.ToLower(name)
			continue
		}
		q := *resource.NewQuantity(int64(count), resource.DecimalSI)
		req[GPUResource], lim[GPUResource] = q, q
		selector[p.cfg.AcceleratorLabel] = strings.ToLower(name)
	}
	if r.InstanceType != "" {
		problems = append(problems, fmt.Sprintf("resources.instance_type: %q means nothing to a pod; ask for cpus, memory and accelerators instead", r.InstanceType))
	}
	if len(problems) > 0 {
		return corev1.ResourceRequirements{}, nil, provision.Prechecks(fmt.Errorf("%s", strings.Join(problems, "\n")))
	}
	out := corev1.ResourceRequirements{Requests: req}
	if len(lim) > 0 {
		out.Limits = lim
	}
	return out, selector, nil
}

// sharedGPU is the resource and the units of it a fraction of one
// accelerator asks (share x per GPU, a whole number), or why none.
func (p *Provider) sharedGPU(accelerator string, share float64) (corev1.ResourceName, int, string) {
	for name, g := range p.cfg.SharedGPUs {
		if !strings.EqualFold(name, accelerator) {
			continue
		}
		n := share * float64(g.PerGPU)
		whole := math.Round(n)
		if g.Resource == "" || whole < 1 || math.Abs(n-whole) > 1e-9 {
			return "", 0, fmt.Sprintf("%s:%g is %g of %s's %d shares per GPU (kubernetes.shared_gpus.%s.per_gpu), not a whole number; ask a multiple of 1/%d of a GPU",
				accelerator, share, n, g.Resource, g.PerGPU, name, max(g.PerGPU, 1))
		}
		return g.Resource, int(whole), ""
	}
	return "", 0, fmt.Sprintf("%s:%g asks a fraction of a GPU, and kubernetes.shared_gpus names no shared resource for %s; name the cluster's time-slicing or MIG resource there, or ask a whole count",
		accelerator, share, accelerator)
}

// avoiding asks the scheduler to place a pod on any node but hosts when it
// can (a preferred, not a required, rule): a quarantined node is tried
// last, never refused, as quarantined zones are.
func avoiding(hosts []string) *corev1.Affinity {
	if len(hosts) == 0 {
		return nil
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 100,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: slices.Clone(hosts)}}},
		}},
	}}
}
