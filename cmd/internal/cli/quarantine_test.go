package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/schema"
)

type quarantineFake struct {
	Service
	qs      []contract.QuarantineView
	cleared []schema.Placement
}

func (s *quarantineFake) Quarantine(context.Context) ([]contract.QuarantineView, error) {
	return s.qs, nil
}
func (s *quarantineFake) ClearQuarantine(_ context.Context, p schema.Placement) (*contract.QuarantineCleared, error) {
	s.cleared = append(s.cleared, p)
	return &contract.QuarantineCleared{Cloud: p.Cloud, Region: p.Region, Zone: p.Zone, WasQuarantined: true}, nil
}
func (s *quarantineFake) Close() error { return nil }

func TestQuarantineListAndClear(t *testing.T) {
	f, out, errb := testFactory()
	fake := &quarantineFake{qs: []contract.QuarantineView{{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", Jobs: []int64{9, 7, 4},
		Weight: 2.5, Until: f.Now().Add(20 * time.Minute), Cause: "lost their node"}}}
	f.Service = func(context.Context) (Service, error) { return fake, nil }
	for _, argv := range [][]string{{"quarantine"}, {"quarantine", "list"}} {
		out.Reset()
		if code := Execute(f, argv); code != 0 {
			t.Fatalf("%v: exit %d: %s", argv, code, errb)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "aws/us-east-1/us-east-1a") ||
			!strings.Contains(lines[1], "00:20 UTC (in 20m0s)") || !strings.Contains(lines[1], "9,7,4") || !strings.HasSuffix(lines[1], "lost their node") {
			t.Errorf("%v:\n%s", argv, out)
		}
	}
	out.Reset()
	if code := Execute(f, []string{"quarantine", "list", "-o", "json"}); code != 0 {
		t.Fatalf("-o json: exit %d", code)
	}
	var got []contract.QuarantineView
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 1 || got[0].Zone != "us-east-1a" {
		t.Errorf("-o json: %v %s", err, out)
	}
	out.Reset()
	if code := Execute(f, []string{"quarantine", "clear", "AWS/us-east-1/us-east-1a"}); code != 0 {
		t.Fatalf("clear: exit %d: %s", code, errb)
	}
	if len(fake.cleared) != 1 || fake.cleared[0] != (schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}) ||
		!strings.Contains(out.String(), "Cleared the quarantine of aws/us-east-1/us-east-1a") {
		t.Errorf("clear: %+v, said %q", fake.cleared, out)
	}
	errb.Reset()
	if code := Execute(f, []string{"quarantine", "clear", "us-east-1a"}); code == 0 ||
		!strings.Contains(errb.String(), `placement "us-east-1a": give it as cloud/region/zone`) {
		t.Errorf("clear of a bare zone: exit %d, %q", code, errb)
	}
	out.Reset()
	fake.qs = nil
	errb.Reset()
	if code := Execute(f, []string{"quarantine"}); code != 0 || out.Len() != 0 || !strings.Contains(errb.String(), "No placement is quarantined.") {
		t.Errorf("none: exit %d, out %q, err %q", code, out, errb)
	}
}
