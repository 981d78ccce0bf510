package cli

import (
	"fmt"
	"strconv"
	"strings"

	"sortie/controller/contract"
	"sortie/strategy"
)

// verdictText is a known failure's verdict as `jobs failures` prints it:
// "deterministic", "unconfirmed", or "flaky (3 of 4 runs)".
func verdictText(k contract.FailureView) string {
	switch {
	case k.Verdict == "":
		return contract.VerdictUnconfirmed
	case k.Verdict == contract.VerdictFlaky:
		return fmt.Sprintf("flaky (%s)", flakyRuns(k.Flaky, k.Runs))
	}
	return k.Verdict
}

// flakyRuns is "3 of 4 runs".
func flakyRuns(flaky, runs int) string {
	return fmt.Sprintf("%d of %d runs", flaky, max(runs, flaky))
}

// evidenceText is the two attempts a verdict rests on: "#1 exit 3 in
// local/local-a, #2 exit 0 in local/local-b"; "-" when there are none.
func evidenceText(ev []contract.EvidenceView) string {
	if len(ev) == 0 {
		return "-"
	}
	parts := make([]string, len(ev))
	for i, e := range ev {
		parts[i] = fmt.Sprintf("#%d exit %s in %s", e.Attempt, strategy.FormatExitCodes(e.ExitCodes), placeText(e.Cloud, e.Region, e.Zone))
	}
	return strings.Join(parts, ", ")
}

func placeText(cloud, region, zone string) string {
	s := cloud + "/" + region
	if zone != "" {
		s += "/" + zone
	}
	return s
}

// attemptText is an attempt's number as `jobs show` prints it, with the
// attempt whose failure it runs again: "2 (confirms 1)".
func attemptText(a contract.AttemptView) string {
	s := strconv.Itoa(a.Attempt)
	if a.Confirms != nil {
		s += fmt.Sprintf(" (confirms %d)", *a.Confirms)
	}
	return s
}
