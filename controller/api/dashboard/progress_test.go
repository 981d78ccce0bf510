package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sortie/strategy"
)

// The attempt card gives the progress the attempt's task reported, and
// nothing when it reported none.
func TestAttemptCardShowsProgress(t *testing.T) {
	td := newTestDash(t, Options{})
	id := td.launch(t, "alice", "train")
	td.failAttempts(t, id, 2)
	as, err := td.svc.Store.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := td.svc.Store.RecordProgress(context.Background(), as[1].ID, 41200); err != nil {
		t.Fatal(err)
	}
	_, page := td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d", id), nil)
	if !strings.Contains(page, `<dt>Progress</dt><dd class="progress">41200</dd>`) {
		t.Errorf("the job page lacks attempt 2's progress:\n%s", page)
	}
	if n := strings.Count(page, "<dt>Progress</dt>"); n != 1 {
		t.Errorf("%d attempt cards show a progress, want 1 (attempt 1 reported none)", n)
	}
	if strings.Contains(page, "<dt>Checkpoint</dt>") {
		t.Errorf("a card shows a checkpoint, none was seen:\n%s", page)
	}
	at := time.Date(2026, 3, 1, 14, 2, 10, 0, time.UTC)
	if err := td.svc.Store.RecordCheckpoint(context.Background(), as[0].ID, strategy.Checkpoint{Key: "gs://ckpts/run/step-9.pt", Modified: at}); err != nil {
		t.Fatal(err)
	}
	_, page = td.do(t, "bob", "GET", fmt.Sprintf("/jobs/%d", id), nil)
	if want := `<dt>Checkpoint</dt><dd class="checkpoint">gs://ckpts/run/step-9.pt <time datetime="2026-03-01T14:02:10Z">2026-03-01T14:02:10Z</time></dd>`; !strings.Contains(page, want) ||
		strings.Count(page, "<dt>Checkpoint</dt>") != 1 {
		t.Errorf("the job page lacks attempt 1's checkpoint %s:\n%s", want, page)
	}
}
