package gcp

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/provision/fit"
	"sortie/provision/gcp/gcpfake"
)

// A cluster with ports gets a firewall rule that opens them to its VMs
// (by their network tag), and loses it when it is terminated.
func TestPortsOpenAFirewallRuleForTheCluster(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	r := spot()
	r.Ports = []string{"8080", "10000-10010"}
	s := spec(71, 2, "us-central1-b", r)
	launch(t, p, s)

	fw := e.fake.Firewall(firewallName(s.Name))
	if fw == nil {
		t.Fatalf("no firewall rule %s; rules: %v", firewallName(s.Name), e.fake.Firewalls())
	}
	if len(fw.GetAllowed()) != 1 || fw.GetAllowed()[0].GetIPProtocol() != "tcp" {
		t.Fatalf("rule allows %v, want tcp", fw.GetAllowed())
	}
	if diff := cmp.Diff([]string{"8080", "10000-10010"}, fw.GetAllowed()[0].GetPorts()); diff != "" {
		t.Errorf("rule ports (-want +got):\n%s", diff)
	}
	if !slices.Equal(fw.GetTargetTags(), []string{s.Name}) || !slices.Equal(fw.GetSourceRanges(), []string{"0.0.0.0/0"}) || fw.GetDirection() != "INGRESS" {
		t.Errorf("rule targets %v from %v (%s), want the cluster's tag from anywhere, ingress", fw.GetTargetTags(), fw.GetSourceRanges(), fw.GetDirection())
	}
	for rank := range 2 {
		in := e.fake.Instance("us-central1-b", instanceName(s.Name, rank))
		if !slices.Contains(in.GetTags().GetItems(), s.Name) {
			t.Errorf("VM %d tags %v lack the cluster's name", rank, in.GetTags().GetItems())
		}
	}
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if fw := e.fake.Firewall(firewallName(s.Name)); fw != nil {
		t.Errorf("Terminate left the firewall rule %s", fw.GetName())
	}
}

// A launch that fails deletes its rule; a rule a crash left without VMs
// goes at the next List; a bad port is refused before anything is made.
func TestFirewallRulesDoNotLeak(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	ctx := testContext(t)
	r := spot()
	r.Ports = []string{"8888"}

	e.fake.SetCapacity("us-central1-a", false)
	failed := spec(72, 1, "us-central1-a", r)
	if _, err := p.Launch(ctx, failed); provision.Classify(err) != provision.ClassCapacity {
		t.Fatalf("Launch without capacity = %v, want a capacity error", err)
	}
	if fw := e.fake.Firewall(firewallName(failed.Name)); fw != nil {
		t.Errorf("a failed launch left its firewall rule")
	}
	// The same name launches again elsewhere, rule and all.
	failed.Placement.Zone, failed.Placement.Region = "us-east1-b", "us-east1"
	launch(t, p, failed)
	if fw := e.fake.Firewall(firewallName(failed.Name)); fw == nil {
		t.Errorf("the relaunch of %s has no firewall rule", failed.Name)
	}

	crashed := provision.ClusterName(73, 0, 1)
	if err := p.ensureFirewall(ctx, crashed, []provision.PortRange{{From: 80, To: 80}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.provider(t).List(ctx); err != nil {
		t.Fatal(err)
	}
	if fw := e.fake.Firewall(firewallName(crashed)); fw != nil {
		t.Errorf("List left the rule of a cluster that has no VM")
	}
	if fw := e.fake.Firewall(firewallName(failed.Name)); fw == nil {
		t.Errorf("List deleted the rule of a running cluster")
	}

	bad := r
	bad.Ports = []string{"22-1"}
	_, err := p.Launch(ctx, spec(74, 1, "us-central1-a", bad))
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), `resources.ports[0]: "22-1"`) {
		t.Fatalf("Launch with a bad port = %v, want a prechecks error naming it", err)
	}
	if n := len(e.fake.Firewalls()); n != 1 {
		t.Errorf("%d firewall rules after a refused launch, want 1", n)
	}
}

// image_id docker:IMAGE is a container image for the task, never a boot
// image: the VM boots the default image.
func TestDockerImageBootsTheDefaultImage(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	r := spot()
	r.ImageID = "docker:pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"
	s := spec(75, 1, "us-central1-a", r)
	launch(t, p, s)
	in, err := p.instanceFor(s, "us-central1-a", machineType{Offer: fit.Offer{Name: "e2-standard-2"}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.GetDisks()[0].GetInitializeParams().GetSourceImage(); got != DefaultImage {
		t.Errorf("boot image %q, want %s", got, DefaultImage)
	}
}
