package gcp

import (
	"fmt"
	"slices"
	"strings"

	"sortie/provision"
)

// pdExtremeIOPS is the IOPS a pd-extreme disk is provisioned with, as
// SkyPilot provisions it.
const pdExtremeIOPS = 20000

// series is a machine type's family: n2-standard-8 -> n2.
func series(name string) string {
	s, _, _ := strings.Cut(name, "-")
	return s
}

// pdExtremeOK reports whether Compute Engine attaches pd-extreme disks to
// the machine type: M1, M2, M3, and N2 with 64 vCPUs or more.
func pdExtremeOK(mt machineType) bool {
	switch series(mt.Name) {
	case "m1", "m2", "m3":
		return true
	case "n2":
		return mt.CPUs >= 64
	}
	return false
}

// hyperdiskOnly reports whether the machine type takes only Hyperdisk
// boot disks (A3 Ultra, A4, N4 and the C4 family).
func hyperdiskOnly(mt machineType) bool {
	return strings.HasPrefix(mt.Name, "a3-ultragpu") || slices.Contains([]string{"a4", "n4", "c4", "c4a", "c4d"}, series(mt.Name))
}

// bootDisk maps resources.disk_tier to the boot disk's type and
// provisioned IOPS (0: the type's default), as SkyPilot maps it: low
// pd-standard, medium pd-balanced, high pd-ssd, ultra pd-extreme, with the
// swaps the machine series need (A3 and G2 have no pd-standard; Hyperdisk
// series take hyperdisk-balanced). ultra is refused where pd-extreme is
// not offered, rather than quietly given less; best is the best the
// machine type takes. "" is pd-balanced, the default.
func bootDisk(mt machineType, tier string) (string, int64, error) {
	if hyperdiskOnly(mt) {
		if tier == "ultra" {
			return "", 0, provision.Prechecks(fmt.Errorf("resources.disk_tier: ultra (pd-extreme) is not offered for %s on gcp, which takes only hyperdisk-balanced boot disks; use disk_tier best for that, or another machine type", mt.Name))
		}
		if tier != "" && !validDiskTier(tier) {
			return "", 0, badDiskTier(tier)
		}
		return "hyperdisk-balanced", 0, nil
	}
	switch tier {
	case "low":
		if s := series(mt.Name); s == "a3" || s == "g2" {
			return "pd-balanced", 0, nil // these series have no pd-standard
		}
		return "pd-standard", 0, nil
	case "", "medium":
		return "pd-balanced", 0, nil
	case "high":
		return "pd-ssd", 0, nil
	case "ultra", "best":
		if pdExtremeOK(mt) {
			return "pd-extreme", pdExtremeIOPS, nil
		}
		if tier == "best" {
			return "pd-ssd", 0, nil
		}
		return "", 0, provision.Prechecks(fmt.Errorf("resources.disk_tier: ultra (pd-extreme) is not offered for %s on gcp (only M1, M2, M3 and N2 with 64+ vCPUs take it); use disk_tier best for the best %s takes (pd-ssd), or a machine type such as n2-standard-64",
			mt.Name, mt.Name))
	}
	return "", 0, badDiskTier(tier)
}

func validDiskTier(t string) bool {
	return slices.Contains([]string{"low", "medium", "high", "ultra", "best"}, t)
}

func badDiskTier(tier string) error {
	return provision.Prechecks(fmt.Errorf("resources.disk_tier: %q is not a disk tier; give low, medium, high, ultra or best", tier))
}

// tier1OK reports whether the machine type can have Tier_1 networking
// (100 Gbps and more of egress): the N2, N2D, C2, C2D, C3, C3D, C4, M3,
// Z3, A2, A3, A4 and G2 series with 30 vCPUs or more.
func tier1OK(mt machineType) bool {
	return mt.CPUs >= 30 && slices.Contains([]string{"n2", "n2d", "c2", "c2d", "c3", "c3d", "c4", "c4a", "c4d", "m3", "z3", "a2", "a3", "a4", "g2"}, series(mt.Name))
}

// bestNetwork says whether resources.network_tier asks for the best
// network, which on Compute Engine is a gVNIC with Tier_1 bandwidth; a
// machine type that cannot have it is refused.
func bestNetwork(mt machineType, tier string) (bool, error) {
	switch tier {
	case "", "standard":
		return false, nil
	case "best":
		if tier1OK(mt) {
			return true, nil
		}
		return false, provision.Prechecks(fmt.Errorf("resources.network_tier: best (gVNIC with Tier_1 networking) is not offered for %s on gcp; it needs 30+ vCPUs of the N2, N2D, C2, C2D, C3, C3D, C4, M3, Z3, A2, A3, A4 or G2 series, e.g. n2-standard-32, or use network_tier standard",
			mt.Name))
	}
	return false, provision.Prechecks(fmt.Errorf("resources.network_tier: %q is not a network tier; give standard or best", tier))
}
