package dashboard

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

// The failures page shows each failure's verdict and the two attempts it
// rests on.
func TestFailuresPageShowsTheVerdict(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "eval-seed")
	ctx := context.Background()
	st := td.svc.Store
	three := 3
	attempt := func(status lifecycle.Status, zone string) *store.Attempt {
		prev, _ := st.LastAttempt(ctx, id, 0)
		a, err := st.NewAttempt(ctx, id, 0, func(int) string { return "c" + zone }, prev, status)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.MarkLaunched(ctx, a.ID, "sim", "sim-1", zone, []string{"n0"}); err != nil {
			t.Fatal(err)
		}
		if err := st.MarkRunning(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	failed := &strategy.Evidence{Attempt: 1, Outcome: strategy.UserFailure, ExitCodes: []*int{&three},
		Placement: schema.Placement{Cloud: "sim", Region: "sim-1", Zone: "sim-1a"}}
	if err := st.EndAttempt(ctx, attempt(lifecycle.Starting, "sim-1a"), store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{&three}},
		strategy.Decision{Action: strategy.Recover, Reason: "confirming failure"}, store.Facts{ConfirmFrom: failed}); err != nil {
		t.Fatal(err)
	}
	v := &strategy.Verdict{Kind: strategy.Deterministic, First: *failed, Second: strategy.Evidence{Attempt: 2, Outcome: strategy.UserFailure,
		ExitCodes: []*int{&three}, Placement: schema.Placement{Cloud: "sim", Region: "sim-1", Zone: "sim-1b"}}}
	if err := st.EndAttempt(ctx, attempt(lifecycle.Recovering, "sim-1b"), store.Observed{Outcome: strategy.UserFailure, ExitCodes: []*int{&three}},
		strategy.Decision{Action: strategy.Fail, Status: lifecycle.Failed, Reason: "deterministic: exit 3 twice"}, store.Facts{Verdict: v}); err != nil {
		t.Fatal(err)
	}
	_, page := td.do(t, "bob", "GET", "/failures", nil)
	if !strings.Contains(page, `<th scope="col">Verdict</th><th scope="col">Evidence</th>`) {
		t.Errorf("the failures page has no verdict column:\n%s", page)
	}
	row := regexp.MustCompile(`(?s)<tr id="failure-[0-9a-f]+">.*?</tr>`).FindString(page)
	for _, want := range []string{`<td class="verdict v-deterministic">deterministic</td>`,
		`<td class="evidence">#1 exit 3 in sim/sim-1/sim-1a<br>#2 exit 3 in sim/sim-1/sim-1b</td>`} {
		if !strings.Contains(row, want) {
			t.Errorf("the failure's row lacks %q:\n%s", want, row)
		}
	}
}
