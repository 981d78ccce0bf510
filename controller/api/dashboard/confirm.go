package dashboard

import (
	"fmt"
	"strings"

	"sortie/controller/contract"
	"sortie/strategy"
)

// verdictCells are a known failure's verdict ("deterministic",
// "unconfirmed", "flaky, 3 of 4 runs") and its evidence, one line per
// attempt ("#1 exit 3 in sim/sim-1/sim-1a").
func verdictCells(f contract.FailureView) (string, []string) {
	verdict := f.Verdict
	switch verdict {
	case "":
		verdict = contract.VerdictUnconfirmed
	case contract.VerdictFlaky:
		verdict = fmt.Sprintf("flaky, %d of %d runs", f.Flaky, max(f.Runs, f.Flaky))
	}
	var ev []string
	for _, e := range f.Evidence {
		where := strings.Join([]string{e.Cloud, e.Region, e.Zone}, "/")
		ev = append(ev, fmt.Sprintf("#%d exit %s in %s", e.Attempt, strategy.FormatExitCodes(e.ExitCodes), strings.TrimSuffix(where, "/")))
	}
	return verdict, ev
}
