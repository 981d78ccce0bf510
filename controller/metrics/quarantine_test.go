package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sortie/schema"
	"sortie/strategy"
)

// The quarantine gauge is read at each scrape: a placement no longer
// quarantined is no longer listed.
func TestQuarantineGaugeIsReadAtScrape(t *testing.T) {
	qs := []strategy.Quarantined{{Placement: schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}}}
	var fail error
	m := New(nil)
	m.WatchQuarantine(func(context.Context) ([]strategy.Quarantined, error) { return qs, fail })
	want := `sortie_quarantined_placements{cloud="aws",region="us-east-1",zone="us-east-1a"} 1`
	if _, body := get(t, m); !strings.Contains(body, want) {
		t.Errorf("scrape lacks %s:\n%s", want, body)
	}
	qs = nil
	if _, body := get(t, m); strings.Contains(body, "sortie_quarantined_placements{") {
		t.Errorf("a cleared quarantine is still listed:\n%s", body)
	}
	fail = errors.New("store closed")
	if code, body := get(t, m); code != 500 || !strings.Contains(body, "store closed") {
		t.Errorf("scrape with a failing store: %d %q, want 500 naming the error", code, body)
	}
}
