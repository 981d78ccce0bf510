package strategy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/schema"
)

func TestAskOf(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want Amounts
	}{
		{"a bare task is one job on one node", "run: x", Amounts{Jobs: 1, Nodes: 1}},
		{"GPUs and vCPUs count every node", "num_nodes: 2\nresources: {accelerators: A100:8, cpus: 4+}\nrun: x",
			Amounts{Jobs: 1, Nodes: 2, VCPUs: 8, GPU("A100"): 16}},
		{"an instance type alone counts no vCPUs", "resources: {instance_type: m6i.large}\nrun: x", Amounts{Jobs: 1, Nodes: 1}},
		{"fractions of a vCPU round up", "resources: {cpus: 0.5}\nrun: x", Amounts{Jobs: 1, Nodes: 1, VCPUs: 1}},
		{"candidates count the most of each type", "resources:\n  any_of:\n    - {accelerators: A100:4}\n    - {accelerators: H100:2}\n    - {accelerators: A100:8}\nrun: x",
			Amounts{Jobs: 1, Nodes: 1, GPU("A100"): 8, GPU("H100"): 2}},
		{"a pipeline holds the most any task asks", "run: a\n---\nnum_nodes: 3\nrun: b\n---\nresources: {accelerators: T4:1}\nrun: c",
			Amounts{Jobs: 1, Nodes: 3, GPU("T4"): 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := schema.Parse([]byte(tt.yaml), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, AskOf(p)); diff != "" {
				t.Errorf("AskOf (-want +got):\n%s", diff)
			}
		})
	}
}
