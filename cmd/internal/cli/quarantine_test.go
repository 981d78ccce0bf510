package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/schema"
	"sortie/strategy"
)

type quarantineFake struct {
	Service
	qs      []contract.QuarantineView
	cleared []strategy.QuarantineKey
}

func (s *quarantineFake) Quarantine(context.Context) ([]contract.QuarantineView, error) {
	return s.qs, nil
}
func (s *quarantineFake) ClearQuarantine(_ context.Context, k strategy.QuarantineKey) (*contract.QuarantineCleared, error) {
	s.cleared = append(s.cleared, k)
	return &contract.QuarantineCleared{Placement: k.String(), Level: k.Level(), Cloud: k.Placement.Cloud, Region: k.Placement.Region, Zone: k.Placement.Zone, WasQuarantined: true}, nil
}
func (s *quarantineFake) Close() error { return nil }

func TestQuarantineListAndClear(t *testing.T) {
	f, out, errb := testFactory()
	typ, node := "p4d.24xlarge", "gpu-7"
	fake := &quarantineFake{qs: []contract.QuarantineView{
		{Placement: "aws/us-east-1/us-east-1a", Level: "zone", Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a", Jobs: []int64{9, 7, 4},
			Weight: 2.5, Until: f.Now().Add(20 * time.Minute), Cause: "lost their node"},
		{Placement: "aws/us-east-1/us-east-1b/type=p4d.24xlarge", Level: "instance_type", Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b", InstanceType: &typ,
			Jobs: []int64{3, 2, 1}, Weight: 3, Until: f.Now().Add(30 * time.Minute), Cause: "lost their node"},
		{Placement: "kubernetes/prod/node=gpu-7", Level: "node", Cloud: "kubernetes", Region: "prod", Node: &node,
			Jobs: []int64{6, 5, 4}, Weight: 3, Until: f.Now().Add(30 * time.Minute), Cause: "lost their node"},
	}}
	f.Service = func(context.Context) (Service, error) { return fake, nil }
	for _, argv := range [][]string{{"quarantine"}, {"quarantine", "list"}} {
		out.Reset()
		if code := Execute(f, argv); code != 0 {
			t.Fatalf("%v: exit %d: %s", argv, code, errb)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 4 || !strings.HasPrefix(lines[1], "aws/us-east-1/us-east-1a ") ||
			!strings.Contains(lines[1], "00:20 UTC (in 20m0s)") || !strings.Contains(lines[1], "9,7,4") || !strings.HasSuffix(lines[1], "lost their node") ||
			!strings.HasPrefix(lines[2], "aws/us-east-1/us-east-1b/type=p4d.24xlarge ") || !strings.HasPrefix(lines[3], "kubernetes/prod/node=gpu-7 ") {
			t.Errorf("%v:\n%s", argv, out)
		}
	}
	out.Reset()
	if code := Execute(f, []string{"quarantine", "list", "-o", "json"}); code != 0 {
		t.Fatalf("-o json: exit %d", code)
	}
	var got []contract.QuarantineView
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 3 || got[0].Zone != "us-east-1a" || got[0].InstanceType != nil ||
		got[1].InstanceType == nil || *got[1].InstanceType != typ || got[2].Node == nil || *got[2].Node != node || got[2].Level != "node" {
		t.Errorf("-o json: %v %s", err, out)
	}
	out.Reset()
	if code := Execute(f, []string{"quarantine", "clear", "AWS/us-east-1/us-east-1a"}); code != 0 {
		t.Fatalf("clear: exit %d: %s", code, errb)
	}
	if len(fake.cleared) != 1 || fake.cleared[0] != (strategy.QuarantineKey{Placement: schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1a"}}) ||
		!strings.Contains(out.String(), "Cleared the quarantine of aws/us-east-1/us-east-1a:") {
		t.Errorf("clear: %+v, said %q", fake.cleared, out)
	}
	for _, arg := range []string{"aws/us-east-1/us-east-1b/type=p4d.24xlarge", "kubernetes/prod/node=gpu-7"} {
		out.Reset()
		if code := Execute(f, []string{"quarantine", "clear", arg}); code != 0 || !strings.Contains(out.String(), "Cleared the quarantine of "+arg+":") {
			t.Errorf("clear %s: exit %d, said %q", arg, code, out)
		}
	}
	want := []strategy.QuarantineKey{
		{Placement: schema.Placement{Cloud: "aws", Region: "us-east-1", Zone: "us-east-1b"}, InstanceType: "p4d.24xlarge"},
		{Placement: schema.Placement{Cloud: "kubernetes", Region: "prod"}, Host: "gpu-7"},
	}
	if len(fake.cleared) != 3 || fake.cleared[1] != want[0] || fake.cleared[2] != want[1] {
		t.Errorf("clears of a type and a node: %+v", fake.cleared)
	}
	errb.Reset()
	if code := Execute(f, []string{"quarantine", "clear", "us-east-1a"}); code != 2 ||
		!strings.Contains(errb.String(), `placement "us-east-1a": give cloud/region/zone for a zone, cloud/region/zone/type=TYPE for an instance type there, or cloud/region/node=NAME for a Kubernetes node`) {
		t.Errorf("clear of a bare zone: exit %d, %q", code, errb)
	}
	out.Reset()
	fake.qs = nil
	errb.Reset()
	if code := Execute(f, []string{"quarantine"}); code != 0 || out.Len() != 0 || !strings.Contains(errb.String(), "No placement is quarantined.") {
		t.Errorf("none: exit %d, out %q, err %q", code, out, errb)
	}
}
