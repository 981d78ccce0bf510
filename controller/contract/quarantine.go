package contract

import (
	"fmt"
	"time"

	"sortie/strategy"
)

// QuarantineView is one quarantined placement (a zone, an instance type in
// a zone, or a Kubernetes node): an item of `sortie quarantine list -o
// json` and of GET /v1/quarantine.
type QuarantineView struct {
	// Placement is what `sortie quarantine clear` takes:
	// cloud/region/zone, cloud/region/zone/type=TYPE or
	// cloud/region/node=NAME.
	Placement string `json:"placement"`
	// Level is zone, instance_type or node.
	Level  string `json:"level"`
	Cloud  string `json:"cloud"`
	Region string `json:"region"`
	// Zone is "" for a node, which serves every namespace.
	Zone         string  `json:"zone"`
	InstanceType *string `json:"instance_type"`
	Node         *string `json:"node"`
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
	Placement    string    `json:"placement"`
	Level        string    `json:"level"`
	Cloud        string    `json:"cloud"`
	Region       string    `json:"region"`
	Zone         string    `json:"zone"`
	InstanceType *string   `json:"instance_type"`
	Node         *string   `json:"node"`
	ClearedAt    time.Time `json:"cleared_at"`
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
// cloud/region/zone, cloud/region/zone/type=TYPE or cloud/region/node=NAME.
func ParsePlacement(s string) (strategy.QuarantineKey, error) {
	k, err := strategy.ParseQuarantineKey(s)
	if err != nil {
		return k, &UsageError{Err: err}
	}
	return k, nil
}
