package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"sortie/provision"
	"sortie/schema"
)

func pl(region, zone string) schema.Placement {
	return schema.Placement{Cloud: CloudName, Region: region, Zone: zone}
}

func TestPlacements(t *testing.T) {
	p := New(Config{Home: t.TempDir(), Regions: []Region{
		{Name: "west", Zones: []string{"west-b", "west-a"}},
		{Name: "east"},
		{Name: "north", Zones: []string{"north-a"}},
	}})
	tests := []struct {
		name    string
		r       schema.Resources
		want    []schema.Placement
		wantErr string
	}{
		{"all, in config order", schema.Resources{}, []schema.Placement{pl("west", "west-b"), pl("west", "west-a"), pl("east", ""), pl("north", "north-a")}, ""},
		{"cloud named", schema.Resources{Cloud: "local"}, []schema.Placement{pl("west", "west-b"), pl("west", "west-a"), pl("east", ""), pl("north", "north-a")}, ""},
		{"region pinned", schema.Resources{Region: "west"}, []schema.Placement{pl("west", "west-b"), pl("west", "west-a")}, ""},
		{"zone pinned", schema.Resources{Region: "west", Zone: "west-a"}, []schema.Placement{pl("west", "west-a")}, ""},
		{"zone pinned without region", schema.Resources{Zone: "north-a"}, []schema.Placement{pl("north", "north-a")}, ""},
		{"zoneless region", schema.Resources{Region: "east"}, []schema.Placement{pl("east", "")}, ""},
		{"other cloud", schema.Resources{Cloud: "aws"}, nil, `resources.cloud "aws"`},
		{"unknown region", schema.Resources{Region: "mars"}, nil, `resources.region "mars": not a local region; offered: west/west-b, west/west-a, east, north/north-a`},
		{"zone of another region", schema.Resources{Region: "west", Zone: "north-a"}, nil, `resources.zone "north-a": not a local zone in region west`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Placements(context.Background(), tt.r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || provision.Classify(err) != provision.ClassPrechecks {
					t.Fatalf("err = %v (%s), want a prechecks error containing %q", err, provision.Classify(err), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("placements (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultRegions(t *testing.T) {
	got, err := New(Config{Home: t.TempDir()}).Placements(context.Background(), schema.Resources{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]schema.Placement{pl("local", "local-a"), pl("local", "local-b")}, got); diff != "" {
		t.Errorf("default placements (-want +got):\n%s", diff)
	}
}

func spec(name string, at schema.Placement, nodes int) provision.ClusterSpec {
	return provision.ClusterSpec{Name: name, Placement: at, NumNodes: nodes,
		Tags: map[string]string{provision.TagManaged: "true", provision.TagCluster: name}}
}

func TestCapacityIsSharedThroughFiles(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	if err := SetCapacity(p.home, schema.Placement{Region: "local", Zone: "local-a"}, false); err != nil {
		t.Fatal(err)
	}
	// Turning it off twice records it once.
	if err := SetCapacity(p.home, pl("local", "local-a"), false); err != nil {
		t.Fatal(err)
	}
	off, err := Capacity(p.home)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]schema.Placement{pl("local", "local-a")}, off); diff != "" {
		t.Errorf("capacity off (-want +got):\n%s", diff)
	}

	// A provider built by another process sees it.
	other := New(Config{Home: p.home})
	_, err = other.Launch(ctx, spec("sortie-1-0-1", pl("local", "local-a"), 1))
	if provision.Classify(err) != provision.ClassCapacity || !strings.Contains(err.Error(), "sortie local capacity local/local-a on") {
		t.Errorf("launch in local-a: %v (%s), want a capacity error saying how to turn it on", err, provision.Classify(err))
	}
	if _, err := other.Launch(ctx, spec("sortie-1-0-2", pl("local", "local-b"), 1)); err != nil {
		t.Errorf("launch in local-b: %v", err)
	}

	// A region entry covers all its zones.
	if err := SetCapacity(p.home, pl("local", ""), false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Launch(ctx, spec("sortie-1-0-3", pl("local", "local-b"), 1)); provision.Classify(err) != provision.ClassCapacity {
		t.Errorf("launch in local-b with region local off: %v", err)
	}

	for _, at := range []schema.Placement{pl("local", "local-a"), pl("local", "")} {
		if err := SetCapacity(p.home, at, true); err != nil {
			t.Fatal(err)
		}
	}
	if off, _ := Capacity(p.home); len(off) != 0 {
		t.Errorf("capacity off after turning all on: %v", off)
	}
	if _, err := p.Launch(ctx, spec("sortie-1-0-1", pl("local", "local-a"), 1)); err != nil {
		t.Errorf("launch in local-a after turning it on: %v", err)
	}
	if err := SetCapacity(p.home, schema.Placement{Cloud: "aws", Region: "us-east-1"}, false); err == nil {
		t.Error("SetCapacity accepted an aws placement")
	}
}

func TestLaunchRejectsWhatNoRetryFixes(t *testing.T) {
	p := newProvider(t)
	for _, s := range []provision.ClusterSpec{
		spec("", pl("local", "local-a"), 1),
		spec("../escape", pl("local", "local-a"), 1),
		spec(".hidden", pl("local", "local-a"), 1),
		spec("sortie-1-0-1", pl("local", "local-z"), 1),
		spec("sortie-1-0-1", pl("mars", ""), 1),
		spec("sortie-1-0-1", schema.Placement{Cloud: "aws", Region: "local", Zone: "local-a"}, 1),
		spec("sortie-1-0-1", pl("local", "local-a"), -1),
	} {
		if _, err := p.Launch(context.Background(), s); provision.Classify(err) != provision.ClassPrechecks {
			t.Errorf("Launch %q at %s with %d nodes: %v, want a prechecks error", s.Name, s.Placement, s.NumNodes, err)
		}
	}
	if names, _ := p.clusterNames(); len(names) != 0 {
		t.Errorf("rejected launches left clusters: %v", names)
	}
}

func TestConcurrentLaunchesOfOneNameMakeOneCluster(t *testing.T) {
	p := newProvider(t)
	s := spec("sortie-2-0-1", pl("local", "local-a"), 3)
	got := make([][]string, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine stands for its own process: a provider of its own.
			c, err := New(Config{Home: p.home}).Launch(context.Background(), s)
			if err != nil {
				t.Error(err)
				return
			}
			for _, n := range c.Nodes {
				got[i] = append(got[i], n.InstanceID)
			}
		}()
	}
	wg.Wait()
	for i := range got {
		if diff := cmp.Diff(got[0], got[i]); diff != "" {
			t.Errorf("launch %d returned other instances (-first +this):\n%s", i, diff)
		}
	}
	// Each provider reserves its own block of numbers: the winner's ids
	// are three different ones, whichever block they came from.
	if len(got[0]) != 3 || got[0][0] == got[0][1] || got[0][1] == got[0][2] || got[0][0] == got[0][2] {
		t.Errorf("instance ids %v, want three different ones", got[0])
	}
}

func TestInstanceIDsAreNeverHandedOutTwice(t *testing.T) {
	p := newProvider(t)
	seen := map[string]string{}
	// Several providers of one home (the controller, a CLI, a restarted
	// controller) launching in turn, more than a block each.
	for i := 0; i < 3*idsPerBlock; i++ {
		q := p
		if i%3 != 0 {
			q = New(Config{Home: p.home})
		}
		name := fmt.Sprintf("sortie-%d-0-1", i+1)
		c, err := q.Launch(context.Background(), spec(name, pl("local", "local-a"), 2))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes {
			if other, ok := seen[n.InstanceID]; ok {
				t.Fatalf("instance id %s handed out to %s and to %s", n.InstanceID, other, name)
			}
			seen[n.InstanceID] = name
		}
	}
}

func TestInterruptedLaunchLeavesNothing(t *testing.T) {
	p := newProvider(t)
	s := spec("sortie-3-0-1", pl("local", "local-a"), 1)
	// A crash in the middle of create leaves its hidden directory behind.
	if err := os.MkdirAll(filepath.Join(p.clustersDir(), ".new-"+s.Name, "node-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if m, err := p.Status(context.Background(), []string{s.Name}); err != nil || len(m) != 0 {
		t.Errorf("Status of a half-created cluster = %v, %v; want absent", m, err)
	}
	if all, err := p.List(context.Background()); err != nil || len(all) != 0 {
		t.Errorf("List with a half-created cluster = %v, %v; want none", all, err)
	}
	c, err := p.Launch(context.Background(), s)
	if err != nil || len(c.Nodes) != 1 || c.Nodes[0].State != provision.NodeRunning {
		t.Fatalf("Launch after a crash = %+v, %v", c, err)
	}
	if _, err := os.Stat(filepath.Join(p.clustersDir(), ".new-"+s.Name)); err == nil {
		t.Error("the half-created directory is still there")
	}
}

// A crash can leave a build under each of its names: the launch that
// finds the first taken builds under the second kind, and once its
// cluster is in place, clears both.
func TestLaunchClearsEveryBuildACrashLeft(t *testing.T) {
	p := newProvider(t)
	s := spec("sortie-3-0-2", pl("local", "local-a"), 1)
	left := []string{".new-" + s.Name, ".new-" + s.Name + ".123"}
	for _, d := range left {
		if err := os.MkdirAll(filepath.Join(p.clustersDir(), d, "node-0"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Launch(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(p.clustersDir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != s.Name {
		t.Errorf("clusters directory holds %v; want only %s", names, s.Name)
	}
}

func TestRemovedNodeDirectoryIsGone(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	s := spec("sortie-4-0-1", pl("local", "local-b"), 2)
	if _, err := p.Launch(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(p.nodeDir(s.Name, 1)); err != nil {
		t.Fatal(err)
	}
	c := mustStatus(t, p, s.Name)
	if c.Nodes[0].State != provision.NodeRunning || c.Nodes[1].State != provision.NodeGone {
		t.Errorf("states = %s, %s; want running, gone", c.Nodes[0].State, c.Nodes[1].State)
	}
	if _, err := p.Runner(ctx, c, 1); err == nil {
		t.Error("Runner reached a node whose directory is gone")
	}
}

func TestListSkipsUntaggedClusters(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	tagged := spec("sortie-5-0-1", pl("local", "local-a"), 1)
	untagged := spec("someone-else", pl("local", "local-a"), 1)
	untagged.Tags = nil
	for _, s := range []provision.ClusterSpec{untagged, tagged} {
		if _, err := p.Launch(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	all, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Name != tagged.Name {
		t.Errorf("List = %v, want only %s", all, tagged.Name)
	}
}

func mustStatus(t *testing.T, p *Provider, name string) *provision.Cluster {
	t.Helper()
	m, err := p.Status(context.Background(), []string{name})
	if err != nil {
		t.Fatal(err)
	}
	c := m[name]
	if c == nil {
		t.Fatalf("Status lacks %s", name)
	}
	return c
}

// A teardown stopped halfway (the controller killed while it removes the
// cluster's files) leaves a cluster that List still finds, so the orphan
// sweep can finish it; before, the record could go first and the rest of
// the directory stayed behind, unlisted.
func TestTerminateStoppedHalfwayIsStillListed(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	s := spec("sortie-6-0-1", pl("local", "local-a"), 2)
	if _, err := p.Launch(ctx, s); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("killed")
	calls := 0
	removeAll = func(path string) error {
		// Every removal but the first is cut short, whatever the order of
		// the directory's entries.
		if calls++; calls > 1 {
			return crash
		}
		return os.RemoveAll(path)
	}
	err := p.Terminate(ctx, s.Name)
	removeAll = os.RemoveAll
	if !errors.Is(err, crash) {
		t.Fatalf("Terminate = %v, want the injected crash", err)
	}
	all, err := p.List(ctx)
	if err != nil || len(all) != 1 || all[0].Name != s.Name {
		t.Fatalf("List after a half teardown = %v, %v; want %s", all, err, s.Name)
	}
	if err := p.Terminate(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.clusterDir(s.Name)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cluster directory after the second Terminate: %v", err)
	}
}

// Launch answers with the cluster it built, without reading it back: the
// answer must be what Status reads, and the build leaves no temporary
// file beside the record.
func TestLaunchAnswersAsStatusReads(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	s := spec("sortie-7-0-1", pl("local", "local-b"), 3)
	s.Tags = map[string]string{provision.TagManaged: "true", "k": "v"}
	got, err := p.Launch(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mustStatus(t, p, s.Name), got); diff != "" {
		t.Errorf("Launch's cluster differs from Status's (-status +launch):\n%s", diff)
	}
	entries, err := os.ReadDir(p.clusterDir(s.Name))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"cluster.json", "node-0", "node-1", "node-2"}; !cmp.Equal(names, want) {
		t.Errorf("the cluster's directory holds %v, want %v", names, want)
	}
	if fi, err := os.Stat(filepath.Join(p.clusterDir(s.Name), recordFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the record: %v, %v; want mode 0600", fi, err)
	}
}

// Status reads a few clusters straight from their directories and many
// after a scan: both ways answer alike, leave out clusters that are not
// there or are being built, and read nothing outside the clusters
// directory for a name no cluster can have.
func TestStatusOfFewAndManyNames(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	var up []string
	for i := range statusScanFrom + 2 {
		s := spec(fmt.Sprintf("sortie-8-0-%d", i+1), pl("local", "local-a"), 1)
		if _, err := p.Launch(ctx, s); err != nil {
			t.Fatal(err)
		}
		up = append(up, s.Name)
	}
	if err := os.MkdirAll(filepath.Join(p.clustersDir(), ".new-sortie-9-0-1.x", "node-0"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A record outside the clusters directory that a name with a path in
	// it would reach.
	if err := os.WriteFile(filepath.Join(p.home, "local", "cluster.json"), []byte(`{"name":".."}`), 0o600); err != nil {
		t.Fatal(err)
	}
	odd := []string{"sortie-9-0-1", ".new-sortie-9-0-1.x", "..", "a/b", ""}
	for _, names := range [][]string{
		{up[0], odd[0], odd[1]},
		{up[1], odd[2], odd[3], odd[4]},
		append(append([]string{}, up...), odd...),
	} {
		m, err := p.Status(ctx, names)
		if err != nil {
			t.Fatalf("Status(%q): %v", names, err)
		}
		var got []string
		for _, n := range names {
			if c := m[n]; c != nil {
				if c.Name != n || len(c.Nodes) != 1 || c.Nodes[0].State != provision.NodeRunning {
					t.Errorf("Status(%q)[%q] = %+v", names, n, c)
				}
				got = append(got, n)
			}
		}
		var want []string
		for _, n := range names {
			if strings.HasPrefix(n, "sortie-8-") {
				want = append(want, n)
			}
		}
		if !cmp.Equal(got, want) || len(m) != len(want) {
			t.Errorf("Status(%q) found %q (%d in all), want %q", names, got, len(m), want)
		}
	}
}

// Terminate removes the whole cluster directory, whatever else came into
// it beside the record and the node directories, and a second Terminate
// finds nothing to do.
func TestTerminateRemovesEverything(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	s := spec("sortie-10-0-1", pl("local", "local-a"), 2)
	if _, err := p.Launch(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.clusterDir(s.Name), "stray"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := p.Terminate(ctx, s.Name); err != nil {
			t.Fatalf("Terminate %d: %v", i+1, err)
		}
		if _, err := os.Stat(p.clusterDir(s.Name)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after Terminate %d the cluster directory is still there: %v", i+1, err)
		}
	}
	if m, err := p.Status(ctx, []string{s.Name}); err != nil || len(m) != 0 {
		t.Errorf("Status after Terminate = %v, %v; want nothing", m, err)
	}
}

// A record read again is parsed only when its bytes changed, and what a
// caller does to the record it got never reaches the next reader.
func TestRecordsReadAgain(t *testing.T) {
	p := newProvider(t)
	s := spec("sortie-9-0-1", pl("local", "local-b"), 1)
	if _, err := p.Launch(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	first, err := p.read(s.Name)
	if err != nil {
		t.Fatal(err)
	}
	first.Nodes[0].State = provision.NodeGone
	first.Tags["x"] = "y"
	again, err := p.read(s.Name)
	if err != nil {
		t.Fatal(err)
	}
	if again.Nodes[0].State != provision.NodeRunning || again.Tags["x"] != "" {
		t.Fatalf("a caller's change to its record reached the next read: %+v", again)
	}
	// Rewritten in place, same length: the new bytes are read, not the
	// record parsed before.
	path := filepath.Join(p.clusterDir(s.Name), recordFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), `"state": "running"`, `"state": "stopped"`, 1)
	if len(changed) != len(b) || changed == string(b) {
		t.Fatalf("the test's rewrite did not apply to %s", b)
	}
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if c := mustStatus(t, p, s.Name); c.Nodes[0].State != provision.NodeStopped {
		t.Errorf("after a rewrite the node is %s, want stopped", c.Nodes[0].State)
	}
}
