package gcp

import (
	"fmt"
	"strings"
	"testing"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
	"sortie/schema"
)

func TestCheckLabels(t *testing.T) {
	many := map[string]string{}
	for i := range maxLabels - ownLabels + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"valid", map[string]string{"team": "ml", "cost_center": "r-d-42", "empty": "", "été": "ok"}, nil},
		{"upper case key", map[string]string{"Team": "ml"}, []string{"resources.labels.Team", "lowercase letter", `use "team"`, "on gcp"}},
		{"digit first", map[string]string{"9lives": "x"}, []string{"resources.labels.9lives", `"l-9lives"`}},
		{"bad value", map[string]string{"owner": "Jane Doe"}, []string{"resources.labels.owner", `"Jane Doe"`, `use "jane-doe"`}},
		{"bad key char", map[string]string{"a.b": "x"}, []string{"resources.labels.a.b", "lowercase letters, digits"}},
		{"long value", map[string]string{"k": strings.Repeat("v", 64)}, []string{"at most 63 characters"}},
		{"sortie's own", map[string]string{"sortie-num-nodes": "1"}, []string{"resources.labels.sortie-num-nodes", "sortie's own"}},
		{"too many", many, []string{"58 labels", "keep at most 57"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLabels(tc.labels)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("checkLabels = %v, want nil", err)
				}
				return
			}
			if provision.Classify(err) != provision.ClassPrechecks {
				t.Fatalf("checkLabels = %v, want a prechecks error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLaunchLabelsTheVMs(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	p := e.provider(t)
	r := spot()
	r.Labels = map[string]string{"team": "ml", "run": "r-1"}
	s := spec(61, 2, "us-central1-a", r)
	launch(t, p, s)
	for rank := range 2 {
		got := e.fake.Instance("us-central1-a", instanceName(s.Name, rank)).GetLabels()
		if got["team"] != "ml" || got["run"] != "r-1" || got[provision.TagCluster] != s.Name {
			t.Errorf("VM %d labels %v, want team=ml, run=r-1 beside sortie's", rank, got)
		}
	}
	bad := spec(62, 1, "us-central1-a", schema.Resources{Cloud: CloudName, Labels: map[string]string{"Team": "ML"}})
	_, err := p.Launch(testContext(t), bad)
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "resources.labels.Team") {
		t.Fatalf("Launch with a label Compute Engine refuses = %v, want a prechecks error naming it", err)
	}
	if e.fake.Instance("us-central1-a", instanceName(bad.Name, 0)) != nil {
		t.Error("a refused launch made a VM")
	}
}
