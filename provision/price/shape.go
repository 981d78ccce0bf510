package price

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sortie/schema"
)

// A cloud priced per resource in config.yaml (local, sim, kubernetes) has
// no instance types: the price of one of its nodes is that of what the
// node asks for. Its keys name that in InstanceType, as a shape:
// "cpus=4,memory=16,A100=1" (vCPUs, GB of memory, then each accelerator
// type and count, in name order; what is not asked for is left out). ""
// is a node that asks for nothing: the node price alone.

// Shape is the InstanceType of a node of a cloud priced per resource
// asking for cpus vCPUs, memoryGB GB and accelerators.
func Shape(cpus, memoryGB float64, accelerators map[string]int) string {
	var parts []string
	if cpus > 0 {
		parts = append(parts, "cpus="+strconv.FormatFloat(cpus, 'f', -1, 64))
	}
	if memoryGB > 0 {
		parts = append(parts, "memory="+strconv.FormatFloat(memoryGB, 'f', -1, 64))
	}
	names := make([]string, 0, len(accelerators))
	for n, c := range accelerators {
		if c > 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		parts = append(parts, n+"="+strconv.Itoa(accelerators[n]))
	}
	return strings.Join(parts, ",")
}

// ShapeOf is the shape of a node of r: the least it asks for ("4+" is 4).
func ShapeOf(r schema.Resources) string {
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, "+"), 64)
		if err != nil || f < 0 {
			return 0
		}
		return f
	}
	return Shape(num(r.CPUs), num(r.Memory), r.Accelerators)
}

// ParseShape reads a shape back.
func ParseShape(s string) (cpus, memoryGB float64, accelerators map[string]int, err error) {
	if s == "" {
		return 0, 0, nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, v, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			return 0, 0, nil, fmt.Errorf("%q is not a shape: %q is not NAME=NUMBER (write cpus=4,memory=16,A100=1)", s, part)
		}
		switch name {
		case "cpus", "memory":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				return 0, 0, nil, fmt.Errorf("%q is not a shape: %s=%q is not a number 0 or more", s, name, v)
			}
			if name == "cpus" {
				cpus = f
			} else {
				memoryGB = f
			}
		default:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return 0, 0, nil, fmt.Errorf("%q is not a shape: %s=%q is not a whole number of accelerators", s, name, v)
			}
			if accelerators == nil {
				accelerators = map[string]int{}
			}
			accelerators[name] = n
		}
	}
	return cpus, memoryGB, accelerators, nil
}
