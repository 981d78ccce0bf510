package gcpfake

import (
	"fmt"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// MachineType is one machine type the fake offers in every zone.
type MachineType struct {
	Name     string
	CPUs     int32
	MemoryMB int32
	Shared   bool
	// Accelerator and AcceleratorCount describe built-in GPUs (a2, g2).
	Accelerator      string
	AcceleratorCount int32
}

// DefaultZones are the zones the fake offers when Options names none:
// region -> zones.
func DefaultZones() map[string][]string {
	return map[string][]string{
		"us-central1":  {"us-central1-a", "us-central1-b", "us-central1-c"},
		"us-east1":     {"us-east1-b", "us-east1-c"},
		"europe-west4": {"europe-west4-a"},
	}
}

// DefaultMachineTypes is a small slice of Compute Engine's catalogue with
// its real shapes: shared-core, general-purpose and GPU types.
func DefaultMachineTypes() []MachineType {
	return []MachineType{
		{Name: "e2-micro", CPUs: 2, MemoryMB: 1024, Shared: true},
		{Name: "e2-medium", CPUs: 2, MemoryMB: 4096, Shared: true},
		{Name: "e2-standard-2", CPUs: 2, MemoryMB: 8192},
		{Name: "e2-standard-4", CPUs: 4, MemoryMB: 16384},
		{Name: "n2-standard-2", CPUs: 2, MemoryMB: 8192},
		{Name: "n2-standard-8", CPUs: 8, MemoryMB: 32768},
		{Name: "n2-highmem-4", CPUs: 4, MemoryMB: 32768},
		{Name: "g2-standard-4", CPUs: 4, MemoryMB: 16384, Accelerator: "nvidia-l4", AcceleratorCount: 1},
		{Name: "a2-highgpu-1g", CPUs: 12, MemoryMB: 87040, Accelerator: "nvidia-tesla-a100", AcceleratorCount: 1},
	}
}

// DefaultImages are the image paths (relative to the API root, as in
// "projects/P/global/images/...") an insert may name as its boot image.
func DefaultImages() []string {
	return []string{
		"projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts",
		"projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
		"projects/ubuntu-os-cloud/global/images/ubuntu-2204-jammy-v20250101",
		"projects/debian-cloud/global/images/family/debian-12",
	}
}

func (s *Server) machineTypeProto(zone string, i int, mt MachineType) *computepb.MachineType {
	m := &computepb.MachineType{
		Kind:        proto.String("compute#machineType"),
		Id:          proto.Uint64(uint64(800000 + i)),
		Name:        proto.String(mt.Name),
		Description: proto.String(fmt.Sprintf("%d vCPUs, %d GB RAM", mt.CPUs, mt.MemoryMB/1024)),
		GuestCpus:   proto.Int32(mt.CPUs),
		MemoryMb:    proto.Int32(mt.MemoryMB),
		IsSharedCpu: proto.Bool(mt.Shared),
		Zone:        proto.String(zone),
		SelfLink:    proto.String(s.link("zones/%s/machineTypes/%s", zone, mt.Name)),
		// Large enough to show that int64 fields travel as strings.
		MaximumPersistentDisksSizeGb: proto.Int64(263168),
		MaximumPersistentDisks:       proto.Int32(128),
	}
	if mt.Accelerator != "" {
		m.Accelerators = []*computepb.Accelerators{{
			GuestAcceleratorType:  proto.String(mt.Accelerator),
			GuestAcceleratorCount: proto.Int32(mt.AcceleratorCount),
		}}
	}
	return m
}

// apiRoot is the prefix of every self link; the client only reads them.
const apiRoot = "https://www.googleapis.com/compute/v1/"

// link is a self link in the fake's project.
func (s *Server) link(format string, args ...any) string {
	return apiRoot + "projects/" + s.project + "/" + fmt.Sprintf(format, args...)
}

// relative strips the API root from a resource URL, leaving
// "projects/P/..." (or whatever partial path the caller gave).
func relative(url string) string {
	if i := strings.Index(url, "/compute/v1/"); i >= 0 {
		return url[i+len("/compute/v1/"):]
	}
	return strings.TrimPrefix(url, "/")
}

// lastSegment is what follows the last slash.
func lastSegment(s string) string {
	return s[strings.LastIndexByte(s, '/')+1:]
}
