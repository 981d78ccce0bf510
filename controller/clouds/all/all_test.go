package all

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/clouds"
)

// The controller opens the clouds whose facts the registry holds, every
// one of them, in the same order, with the same facts; and task files
// name exactly those.
func TestEveryKnownCloudOpensAndNoOther(t *testing.T) {
	var opened, known []string
	for _, c := range Clouds() {
		opened = append(opened, c.Name)
		if c.Open == nil {
			t.Errorf("%s cannot be opened", c.Name)
		}
		k := clouds.Lookup(c.Name)
		if k.Remote != c.Remote || k.Task.Store != c.Task.Store || (k.Notice == nil) != (c.Notice == nil) || (k.Task.Place == nil) != (c.Task.Place == nil) {
			t.Errorf("%s: the controller's entry has other facts than the registry's", c.Name)
		}
	}
	for _, c := range clouds.Known() {
		known = append(known, c.Name)
	}
	if diff := cmp.Diff(known, opened); diff != "" {
		t.Errorf("clouds (-known +opened):\n%s", diff)
	}
	if diff := cmp.Diff(known, clouds.Schema().Names()); diff != "" {
		t.Errorf("clouds task files may name (-known +schema):\n%s", diff)
	}
}
