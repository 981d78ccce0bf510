package gcp

import (
	"strings"
	"testing"

	"sortie/provision"
	"sortie/provision/fit"
	"sortie/provision/gcp/gcpfake"
	"sortie/schema"
)

func mt(name string, cpus float64) machineType {
	return machineType{Offer: fit.Offer{Name: name, CPUs: cpus}}
}

func TestBootDiskFollowsTheTier(t *testing.T) {
	for _, tc := range []struct {
		machine machineType
		tier    string
		want    string
		iops    int64
		err     string
	}{
		{mt("e2-standard-4", 4), "", "pd-balanced", 0, ""},
		{mt("e2-standard-4", 4), "low", "pd-standard", 0, ""},
		{mt("e2-standard-4", 4), "medium", "pd-balanced", 0, ""},
		{mt("e2-standard-4", 4), "high", "pd-ssd", 0, ""},
		{mt("e2-standard-4", 4), "best", "pd-ssd", 0, ""},
		{mt("e2-standard-4", 4), "ultra", "", 0, "ultra (pd-extreme) is not offered for e2-standard-4 on gcp"},
		{mt("n2-standard-32", 32), "ultra", "", 0, "n2-standard-64"},
		{mt("n2-standard-64", 64), "ultra", "pd-extreme", 20000, ""},
		{mt("n2-standard-64", 64), "best", "pd-extreme", 20000, ""},
		{mt("m3-megamem-64", 64), "ultra", "pd-extreme", 20000, ""},
		{mt("g2-standard-4", 4), "low", "pd-balanced", 0, ""},
		{mt("a3-highgpu-8g", 208), "low", "pd-balanced", 0, ""},
		{mt("n4-standard-8", 8), "low", "hyperdisk-balanced", 0, ""},
		{mt("c4-standard-8", 8), "best", "hyperdisk-balanced", 0, ""},
		{mt("a3-ultragpu-8g", 224), "", "hyperdisk-balanced", 0, ""},
		{mt("n4-standard-8", 8), "ultra", "", 0, "takes only hyperdisk-balanced"},
		{mt("e2-standard-4", 4), "fast", "", 0, `resources.disk_tier: "fast" is not a disk tier`},
		{mt("n4-standard-8", 8), "fast", "", 0, `resources.disk_tier: "fast" is not a disk tier`},
	} {
		got, iops, err := bootDisk(tc.machine, tc.tier)
		if tc.err != "" {
			if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: %v, want a prechecks error with %q", tc.machine.Name, tc.tier, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want || iops != tc.iops {
			t.Errorf("%s %q: %s %d %v, want %s %d", tc.machine.Name, tc.tier, got, iops, err, tc.want, tc.iops)
		}
	}
}

func TestBestNetworkNeedsTier1(t *testing.T) {
	for _, tc := range []struct {
		machine machineType
		tier    string
		want    bool
		err     string
	}{
		{mt("e2-standard-4", 4), "", false, ""},
		{mt("e2-standard-4", 4), "standard", false, ""},
		{mt("n2-standard-32", 32), "best", true, ""},
		{mt("c3-standard-44", 44), "best", true, ""},
		{mt("n2-standard-16", 16), "best", false, "best (gVNIC with Tier_1 networking) is not offered for n2-standard-16 on gcp"},
		{mt("e2-standard-32", 32), "best", false, "e.g. n2-standard-32"},
		{mt("n2-standard-32", 32), "fastest", false, `resources.network_tier: "fastest" is not a network tier`},
	} {
		got, err := bestNetwork(tc.machine, tc.tier)
		if tc.err != "" {
			if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: %v, want a prechecks error with %q", tc.machine.Name, tc.tier, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %q: %v %v, want %v", tc.machine.Name, tc.tier, got, err, tc.want)
		}
	}
}

// The tiers reach the VMs: the boot disk's type and IOPS, a gVNIC and
// Tier_1 bandwidth; without a machine type, best picks one that has it;
// what the machine type cannot have is refused before any VM is made.
func TestTiersReachTheVMs(t *testing.T) {
	types := append(gcpfake.DefaultMachineTypes(),
		gcpfake.MachineType{Name: "n2-standard-32", CPUs: 32, MemoryMB: 131072},
		gcpfake.MachineType{Name: "n2-standard-64", CPUs: 64, MemoryMB: 262144})
	e := newEnv(t, false, gcpfake.Options{MachineTypes: types})
	p := e.provider(t)
	ctx := testContext(t)
	r := schema.Resources{Cloud: CloudName, DiskTier: "best", NetworkTier: "best"}
	s := spec(81, 1, "us-central1-a", r)
	launch(t, p, s)
	got := e.fake.Instance("us-central1-a", instanceName(s.Name, 0))
	if m := lastSegment(got.GetMachineType()); m != "n2-standard-32" {
		t.Errorf("machine type %s, want n2-standard-32, the smallest with Tier_1 networking", m)
	}
	nic := got.GetNetworkInterfaces()[0]
	if nic.GetNicType() != "GVNIC" || got.GetNetworkPerformanceConfig().GetTotalEgressBandwidthTier() != "TIER_1" {
		t.Errorf("nic %v, performance %v; want GVNIC and TIER_1", nic.GetNicType(), got.GetNetworkPerformanceConfig())
	}
	in, err := p.instanceFor(s, "us-central1-a", mt("n2-standard-32", 32), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := in.GetDisks()[0].GetInitializeParams(); d.GetDiskType() != "zones/us-central1-a/diskTypes/pd-ssd" || d.GetProvisionedIops() != 0 {
		t.Errorf("disk %s with %d IOPS, want pd-ssd (the best n2-standard-32 takes)", d.GetDiskType(), d.GetProvisionedIops())
	}
	big := s
	big.Resources.InstanceType = "n2-standard-64"
	if in, err = p.instanceFor(big, "us-central1-a", mt("n2-standard-64", 64), 0); err != nil {
		t.Fatal(err)
	}
	if d := in.GetDisks()[0].GetInitializeParams(); d.GetDiskType() != "zones/us-central1-a/diskTypes/pd-extreme" || d.GetProvisionedIops() != 20000 {
		t.Errorf("disk %s with %d IOPS, want pd-extreme at 20000", d.GetDiskType(), d.GetProvisionedIops())
	}

	for _, bad := range []schema.Resources{
		{Cloud: CloudName, InstanceType: "n2-standard-8", NetworkTier: "best"},
		{Cloud: CloudName, InstanceType: "e2-standard-4", DiskTier: "ultra"},
	} {
		s := spec(82, 1, "us-central1-a", bad)
		_, err := p.Launch(ctx, s)
		if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "on gcp") {
			t.Errorf("Launch of %+v = %v, want a prechecks error", bad, err)
		}
		if e.fake.Instance("us-central1-a", instanceName(s.Name, 0)) != nil {
			t.Errorf("a refused launch made a VM")
		}
	}
}
