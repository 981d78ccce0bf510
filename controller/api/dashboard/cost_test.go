package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sortie/controller/lifecycle"
	"sortie/controller/store"
	"sortie/strategy"
)

// The queue and a job's page show what the job cost, and its page what
// each attempt did; "-" when not known.
func TestCostsShown(t *testing.T) {
	td := newTestDash(t, Options{})
	ctx := context.Background()
	st := td.svc.Store
	priced := td.launch(t, "alice", "priced")
	unpriced := td.launch(t, "alice", "unpriced")
	a, err := st.NewAttempt(ctx, priced, 0, func(int) string { return "c" }, nil, lifecycle.Starting)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkLaunched(ctx, a.ID, "sim", "sim-1", "sim-1a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.InstanceIDs = []string{"n0"}
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{new(int)}, Cost: &store.Cost{Dollars: 12.4}},
		strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded, Reason: "succeeded"}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
	_, page := td.do(t, "alice", "GET", "/", nil)
	for _, want := range []string{`<th scope="col" class="num">Cost</th>`,
		fmt.Sprintf(`<tr id="job-%d" data-status="SUCCEEDED">`, priced), `<td class="num cost">$12.40</td>`, `<td class="num cost">-</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the queue lacks %q", want)
		}
	}
	_, page = td.do(t, "alice", "GET", fmt.Sprintf("/jobs/%d", priced), nil)
	for _, want := range []string{`<dd id="cost">$12.40</dd>`, `<dd class="cost">$12.40</dd>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the job's page lacks %q", want)
		}
	}
	_, page = td.do(t, "alice", "GET", fmt.Sprintf("/jobs/%d", unpriced), nil)
	if !strings.Contains(page, `<dd id="cost">-</dd>`) {
		t.Errorf("a job of unknown cost does not say so")
	}
}
