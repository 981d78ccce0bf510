package contract

// Verdicts of a known failure (`jobs failures`): whether a confirmation
// run (job_recovery.confirm_failures) failed the same way.
const (
	VerdictDeterministic = "deterministic"
	VerdictFlaky         = "flaky"
	VerdictUnconfirmed   = "unconfirmed"
)

// EvidenceView is one of the two attempts a verdict rests on.
type EvidenceView struct {
	Task      int    `json:"task"`
	Attempt   int    `json:"attempt"`
	Outcome   string `json:"outcome"`
	ExitCodes []*int `json:"exit_codes" schema:"nullable"`
	Cloud     string `json:"cloud"`
	Region    string `json:"region"`
	Zone      string `json:"zone"`
}

// FlakyCount is how often a job's inputs were found flaky.
type FlakyCount struct {
	Flaky int `json:"flaky"`
	Runs  int `json:"runs"`
}

// evidencePlace names where an attempt ran: "aws/us-east-1/us-east-1a".
func evidencePlace(e EvidenceView) string {
	s := e.Cloud + "/" + e.Region
	if e.Zone != "" {
		s += "/" + e.Zone
	}
	return s
}
