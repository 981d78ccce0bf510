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
	qs := []strategy.Quarantined{{Placement: schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}},
		{Placement: schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b"}, InstanceType: "p4d.24xlarge"},
		{Placement: schema.Placement{Cloud: "kubernetes", Region: "prod"}, Host: "gpu-7"}}
	var fail error
	m := New(nil)
	m.WatchQuarantine(func(context.Context) ([]strategy.Quarantined, error) { return qs, fail })
	_, body := get(t, m)
	for _, want := range []string{
		`sortie_quarantined_placements{cloud="aws",instance_type="",level="zone",node="",region="us-east-1",zone="us-east-1a"} 1`,
		`sortie_quarantined_placements{cloud="aws",instance_type="p4d.24xlarge",level="instance_type",node="",region="us-east-1",zone="us-east-1b"} 1`,
		`sortie_quarantined_placements{cloud="kubernetes",instance_type="",level="node",node="gpu-7",region="prod",zone=""} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
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
