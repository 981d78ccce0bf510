package cli

import (
	"strings"
	"testing"

	"sortie/controller/contract"
)

// A task left with no placement (every cloud it names is disabled here)
// says so where the placements would be, rather than printing the table's
// headers over no rows; the reason is in what the launch lacks.
func TestPlanWithNoPlacementSaysNone(t *testing.T) {
	var out strings.Builder
	p := &contract.Plan{Name: "minimal", Tasks: []contract.TaskPlan{{Strategy: "EAGER_NEXT_REGION", NumNodes: 1}},
		Missing: []string{"resources: aws is not enabled here: no AWS credentials"}}
	if err := printPlan(&out, p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "  Placements:  none a launch from here could try (see what it lacks, below)\n") {
		t.Errorf("plan lacks the line saying no placement is left:\n%s", out.String())
	}
	if strings.Contains(out.String(), "RESOLVED BY") {
		t.Errorf("plan prints the placements' headers over no rows:\n%s", out.String())
	}
}
