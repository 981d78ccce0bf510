package strategy

import (
	"fmt"
	"strings"

	"sortie/schema"
)

// QuarantineKey names what a quarantine sets aside, at one of three
// levels (QuarantineKey.Level):
//
//   - a zone: Placement alone (a region, on a cloud without zones);
//   - an instance type in a zone: Placement and InstanceType;
//   - a Kubernetes node: Placement's cloud and region (the context) and
//     Host, with no zone: a node serves every namespace of its cluster.
type QuarantineKey struct {
	Placement    schema.Placement
	InstanceType string
	Host         string
}

// The levels of a QuarantineKey.
const (
	LevelZone         = "zone"
	LevelInstanceType = "instance_type"
	LevelNode         = "node"
)

// Level says which of the three levels k is.
func (k QuarantineKey) Level() string {
	switch {
	case k.Host != "":
		return LevelNode
	case k.InstanceType != "":
		return LevelInstanceType
	}
	return LevelZone
}

// String is k as `sortie quarantine list` shows it and `clear` reads it:
// cloud/region/zone, then /type=TYPE for an instance type, or
// cloud/region/node=NAME for a node.
func (k QuarantineKey) String() string {
	switch k.Level() {
	case LevelNode:
		return k.Placement.Cloud + "/" + k.Placement.Region + "/node=" + k.Host
	case LevelInstanceType:
		return k.Placement.String() + "/type=" + k.InstanceType
	}
	return k.Placement.String()
}

// describe is k in a sentence: "m6i.large in aws/us-east-1/us-east-1a",
// "node gpu-7 of kubernetes/prod".
func (k QuarantineKey) describe() string {
	switch k.Level() {
	case LevelNode:
		return "node " + k.Host + " of " + k.Placement.Cloud + "/" + k.Placement.Region
	case LevelInstanceType:
		return k.InstanceType + " in " + k.Placement.String()
	}
	return k.Placement.String()
}

// zone is the zone key an instance type's key is in; a zone's and a
// node's key are their own.
func (k QuarantineKey) zone() QuarantineKey {
	if k.Level() == LevelInstanceType {
		return QuarantineKey{Placement: k.Placement}
	}
	return k
}

// Normal is k as quarantine compares keys: the cloud's name is
// case-insensitive, and a node's key has no zone.
func (k QuarantineKey) Normal() QuarantineKey {
	k.Placement = PlacementKey(k.Placement)
	if k.Host != "" {
		k.Placement.Zone, k.InstanceType = "", ""
	}
	return k
}

// ParseQuarantineKey reads a key as QuarantineKey.String writes it.
func ParseQuarantineKey(s string) (QuarantineKey, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	last := parts[len(parts)-1]
	var k QuarantineKey
	want := 3
	switch {
	case strings.HasPrefix(last, "node="):
		k.Host, parts = strings.TrimPrefix(last, "node="), parts[:len(parts)-1]
		want = 2
	case strings.HasPrefix(last, "type="):
		k.InstanceType, parts = strings.TrimPrefix(last, "type="), parts[:len(parts)-1]
	}
	ok := len(parts) == want && !strings.Contains(k.Host+k.InstanceType, "=") &&
		(k.Level() != LevelZone || !strings.HasPrefix(last, "node=") && !strings.HasPrefix(last, "type="))
	for _, p := range parts {
		ok = ok && p != "" && !strings.Contains(p, "=")
	}
	if !ok {
		return QuarantineKey{}, fmt.Errorf("placement %q: give cloud/region/zone for a zone, cloud/region/zone/type=TYPE for an instance type there, "+
			"or cloud/region/node=NAME for a Kubernetes node, as `sortie quarantine list` shows them", s)
	}
	k.Placement = schema.Placement{Cloud: parts[0], Region: parts[1]}
	if want == 3 {
		k.Placement.Zone = parts[2]
	}
	return k.Normal(), nil
}
