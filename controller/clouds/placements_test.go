package clouds

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/config"
	"sortie/schema"
)

func TestConfigPlacementsAnswerFromTheConfigAlone(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	cfg := config.Config{Home: home}
	cfg.Local.Regions = []config.LocalRegion{{Name: "r1", Zones: []string{"r1-a", "r1-b"}}}
	cfg.Sim.Regions = []config.LocalRegion{{Name: "s1", Zones: []string{"s1-a"}}}
	set := NewSet(cfg, Light())

	for _, tc := range []struct {
		r      schema.Resources
		want   []schema.Placement
		ok     bool
		hasErr bool
	}{
		{schema.Resources{}, []schema.Placement{{Cloud: "local", Region: "r1", Zone: "r1-a"}, {Cloud: "local", Region: "r1", Zone: "r1-b"}}, true, false},
		{schema.Resources{Cloud: "local", Zone: "r1-b"}, []schema.Placement{{Cloud: "local", Region: "r1", Zone: "r1-b"}}, true, false},
		{schema.Resources{Cloud: "local", Zone: "nowhere"}, nil, true, true},
		{schema.Resources{Cloud: "sim"}, []schema.Placement{{Cloud: "sim", Region: "s1", Zone: "s1-a"}}, true, false},
		{schema.Resources{Cloud: "aws", Region: "us-east-1"}, nil, false, false},
	} {
		got, ok, err := set.ConfigPlacements(ctx, tc.r)
		if ok != tc.ok || (err != nil) != tc.hasErr {
			t.Errorf("%+v: ok %t, err %v", tc.r, ok, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.r, diff)
		}
	}
	// Asking the sim opened no state: nothing was written in the home.
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("the home holds %v", entries)
	}
	if _, err := os.Stat(filepath.Join(home, "sim")); !os.IsNotExist(err) {
		t.Errorf("sim state touched: %v", err)
	}
	var none *Set
	if _, ok, err := none.ConfigPlacements(ctx, schema.Resources{}); ok || err != nil {
		t.Errorf("a nil set answered: %t %v", ok, err)
	}
}
