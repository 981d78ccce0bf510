package contract

import (
	"fmt"
	"strings"
	"time"

	"sortie/schema"
	"sortie/strategy"
)

// QuarantineView is one quarantined placement: an item of `sortie
// quarantine list -o json` and of GET /v1/quarantine.
type QuarantineView struct {
	Cloud  string `json:"cloud"`
	Region string `json:"region"`
	Zone   string `json:"zone"`
	// Jobs are the different jobs whose failures there count, newest first.
	Jobs []int64 `json:"jobs"`
	// Weight is the failures' weighted count now.
	Weight float64   `json:"weight"`
	Until  time.Time `json:"until"`
	Cause  string    `json:"cause"`
	// Reason is what a launch try says of it.
	Reason string `json:"reason"`
}

// QuarantineCleared is what `sortie quarantine clear` did.
type QuarantineCleared struct {
	Cloud     string    `json:"cloud"`
	Region    string    `json:"region"`
	Zone      string    `json:"zone"`
	ClearedAt time.Time `json:"cleared_at"`
	// WasQuarantined says whether the placement was quarantined before.
	WasQuarantined bool `json:"was_quarantined"`
}

// AdminError refuses what only an admin of a server may do.
type AdminError struct {
	// Verb is what was refused ("clear a quarantine").
	Verb string
}

func (e *AdminError) Error() string {
	return fmt.Sprintf("only an admin may %s: ask an admin of the server", e.Verb)
}

// ParsePlacement reads a placement as `sortie quarantine list` writes it:
// cloud/region/zone.
func ParsePlacement(s string) (schema.Placement, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return schema.Placement{}, &UsageError{Err: fmt.Errorf("placement %q: give it as cloud/region/zone, as `sortie quarantine list` shows it", s)}
	}
	return strategy.PlacementKey(schema.Placement{Cloud: parts[0], Region: parts[1], Zone: parts[2]}), nil
}
