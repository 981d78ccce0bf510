package aws

import (
	"fmt"
	"strings"
	"testing"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/schema"
)

func TestCheckLabels(t *testing.T) {
	many := map[string]string{}
	for i := range maxTags - ownTags + 1 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string // in the error, or nothing for a valid set
	}{
		{"valid", map[string]string{"team": "ml", "Cost Center": "r&d / 42", "empty": ""}, nil},
		{"aws prefix", map[string]string{"AWS:owner": "x"}, []string{"resources.labels.AWS:owner", "aws: prefix", "on aws"}},
		{"sortie's own tag", map[string]string{"sortie-job": "7"}, []string{"resources.labels.sortie-job", `"sortie-" prefix`}},
		{"Name", map[string]string{"name": "mine"}, []string{"resources.labels.name", "sortie sets name itself"}},
		{"long key", map[string]string{strings.Repeat("k", 129): "v"}, []string{"key longer than 128"}},
		{"long value", map[string]string{"k": strings.Repeat("v", 257)}, []string{"resources.labels.k", "longer than 256"}},
		{"every problem", map[string]string{"aws:a": "", "sortie-b": ""}, []string{"resources.labels.aws:a", "resources.labels.sortie-b"}},
		{"too many", many, []string{"44 labels", "keep at most 43"}},
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

// Labels become tags of the instances and of their volumes; a label EC2
// refuses stops the launch before anything is asked of EC2.
func TestLaunchTagsLabels(t *testing.T) {
	e := newEnv(t)
	p := e.provider(t)
	ctx := testContext(t)
	r := spot()
	r.Labels = map[string]string{"team": "ml", "project": "sortie test"}
	s := spec(951, 1, zone("us-east-1a"), r)
	c := launch(t, p, s)
	id := c.Nodes[0].InstanceID
	raw, err := testenv.Call(ctx, e.moto.URL, "us-east-1", "DescribeInstances", map[string]string{"InstanceId.1": id})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<key>team</key><value>ml</value>", "<key>project</key><value>sortie test</value>",
		"<key>" + provision.TagCluster + "</key><value>" + s.Name + "</value>"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("instance lacks the tag %s", want)
		}
	}
	vols, err := testenv.Call(ctx, e.moto.URL, "us-east-1", "DescribeVolumes", map[string]string{
		"Filter.1.Name": "attachment.instance-id", "Filter.1.Value.1": id})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(vols), "<key>team</key><value>ml</value>") {
		t.Errorf("the instance's volume lacks the label's tag:\n%s", vols)
	}
	if got := c.Tags["team"]; got != "ml" {
		t.Errorf("cluster tags %v, want team=ml", c.Tags)
	}

	bad := spec(952, 1, zone("us-east-1a"), schema.Resources{Cloud: "aws", InstanceType: "t3.micro", Labels: map[string]string{"sortie-cluster": "other"}})
	e.proxy.ResetCalls()
	_, err = p.Launch(ctx, bad)
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), "resources.labels.sortie-cluster") {
		t.Fatalf("Launch with a label replacing sortie's tag = %v, want a prechecks error naming it", err)
	}
	if n := e.proxy.Calls("RunInstances", ""); n != 0 {
		t.Errorf("RunInstances called %d times for a refused label", n)
	}
}
