package gcp

import (
	"crypto/sha1"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"

	"sortie/provision"
)

// Labels sortie adds besides the provision tags, for its own bookkeeping.
const (
	// labelNumNodes is the cluster's size, so that Status knows which ranks
	// are missing when VMs vanish.
	labelNumNodes = "sortie-num-nodes"
)

// instanceNameRE is Compute Engine's rule for instance names.
var instanceNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// instanceName is the deterministic name of a cluster's VM of rank.
func instanceName(cluster string, rank int) string {
	return fmt.Sprintf("%s-%d", cluster, rank)
}

// validClusterName checks that every VM name derived from name is one
// Compute Engine accepts.
func validClusterName(name string, nodes int) error {
	longest := instanceName(name, max(nodes-1, 0))
	if !instanceNameRE.MatchString(longest) {
		return provision.Prechecks(fmt.Errorf("cluster name %q: VM name %q is not a valid Compute Engine name (lowercase letters, digits and dashes, starting with a letter, at most 63 characters)",
			name, longest))
	}
	return nil
}

// labelKey makes a tag key a valid label key: lowercase letters, digits,
// '_' and '-', starting with a letter, at most 63 characters.
func labelKey(k string) string {
	v := labelValue(k)
	if v == "" || v[0] < 'a' || v[0] > 'z' {
		v = "k-" + v
	}
	return truncate(v, 63)
}

// labelValue makes a tag value a valid label value. The provision tags'
// values (decimal ids, cluster names, "true") pass unchanged.
func labelValue(v string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(v) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return truncate(b.String(), 63)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// clusterLabels are the labels every VM of spec's cluster carries.
func clusterLabels(spec provision.ClusterSpec, rank int) map[string]string {
	labels := map[string]string{}
	for k, v := range spec.Tags {
		labels[labelKey(k)] = labelValue(v)
	}
	// The task's own, as given: checkLabels refused what Compute Engine
	// would, and any that would replace sortie's.
	maps.Copy(labels, spec.Resources.Labels)
	labels[provision.TagManaged] = "true"
	labels[provision.TagCluster] = labelValue(spec.Name)
	labels[provision.TagRank] = strconv.Itoa(rank)
	labels[labelNumNodes] = strconv.Itoa(spec.NumNodes)
	return labels
}

// requestID is a deterministic request id (a UUID, as the API requires)
// for one logical request: the same parts give the same id, so a retried
// insert or delete is answered with the first one's operation instead of
// acting twice.
func requestID(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	h[6] = h[6]&0x0f | 0x50 // version 5 (name-based, SHA-1)
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// insertRequestID names the gen-th insert of a VM in a zone. The
// generation moves on only when an earlier insert's answer comes back
// finished and its VM is not there: the insert failed, or the VM has since
// been deleted (see insert).
func insertRequestID(project, zone, name string, gen int) string {
	return requestID("insert", project, zone, name, strconv.Itoa(gen))
}

// deleteRequestID names sortie's delete of one VM. Compute Engine records
// it as the operation's clientOperationId, which is how a restarted
// controller tells its own deletions from the cloud's.
func deleteRequestID(project, zone string, instanceID uint64) string {
	return requestID("delete", project, zone, strconv.FormatUint(instanceID, 10))
}

// lastSegment is what follows the last slash of a resource URL.
func lastSegment(s string) string {
	return s[strings.LastIndexByte(s, '/')+1:]
}

// regionOf is a zone's region: us-central1-a -> us-central1.
func regionOf(zone string) string {
	if i := strings.LastIndexByte(zone, '-'); i > 0 {
		return zone[:i]
	}
	return zone
}

// rankOf is the rank label of a VM, or -1.
func rankOf(in *computepb.Instance) int {
	r, err := strconv.Atoi(in.GetLabels()[provision.TagRank])
	if err != nil || r < 0 {
		return -1
	}
	return r
}

// sshAddr is the address SSH should use: the external IP when the VM has
// one, else the internal one (reached through a proxy command).
func sshAddr(in *computepb.Instance) string {
	for _, ni := range in.GetNetworkInterfaces() {
		for _, ac := range ni.GetAccessConfigs() {
			if ac.GetNatIP() != "" {
				return ac.GetNatIP()
			}
		}
	}
	return internalIP(in)
}

// internalIP is the VM's address in its network, which its peers use.
func internalIP(in *computepb.Instance) string {
	for _, ni := range in.GetNetworkInterfaces() {
		if ni.GetNetworkIP() != "" {
			return ni.GetNetworkIP()
		}
	}
	return ""
}

// remember records the SSH address of a VM.
func (p *Provider) remember(in *computepb.Instance) {
	addr := sshAddr(in)
	if addr == "" || in.GetId() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addrs[strconv.FormatUint(in.GetId(), 10)] = addr
}
