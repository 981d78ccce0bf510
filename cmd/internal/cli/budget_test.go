package cli

import (
	"fmt"
	"testing"

	"sortie/controller/contract"
)

// A launch refused for a spent budget exits 4, however it is wrapped.
func TestBudgetSpentExitStatus(t *testing.T) {
	be := &contract.BudgetError{User: "alice", Spent: 512, Budget: 500, Month: "2026-12"}
	for _, err := range []error{be, fmt.Errorf("launch: %w", be)} {
		if got := exitCode(err); got != ExitBudgetSpent || ExitBudgetSpent != 4 {
			t.Errorf("exitCode(%v) = %d, want 4", err, got)
		}
	}
}
