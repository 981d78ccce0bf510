package price

import (
	"reflect"
	"testing"

	"sortie/schema"
)

func TestShape(t *testing.T) {
	s := ShapeOf(schema.Resources{CPUs: "4+", Memory: "16", Accelerators: map[string]int{"T4": 2, "A100": 1}})
	if s != "cpus=4,memory=16,A100=1,T4=2" {
		t.Errorf("ShapeOf: %q", s)
	}
	cpus, mem, accs, err := ParseShape(s)
	if err != nil || cpus != 4 || mem != 16 || !reflect.DeepEqual(accs, map[string]int{"A100": 1, "T4": 2}) {
		t.Errorf("ParseShape(%q): %v %v %v %v", s, cpus, mem, accs, err)
	}
	if ShapeOf(schema.Resources{}) != "" {
		t.Errorf("a node asking for nothing: %q, want \"\"", ShapeOf(schema.Resources{}))
	}
	if Shape(0.5, 0, nil) != "cpus=0.5" {
		t.Errorf("half a CPU: %q", Shape(0.5, 0, nil))
	}
	for _, bad := range []string{"cpus", "cpus=x", "memory=-1", "A100=1.5", "=3"} {
		if _, _, _, err := ParseShape(bad); err == nil {
			t.Errorf("ParseShape(%q): no error", bad)
		}
	}
}
