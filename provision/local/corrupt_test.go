package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision"
)

// A cluster.json that cannot be read back makes its own cluster broken in
// Status, and nothing else: the other clusters answer, List skips it, and
// Terminate removes it.
func TestACorruptClusterRecordSpoilsOnlyItself(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, record, want string }{
		{"not JSON", `{"name":`, "unexpected end of JSON input"},
		{"null nodes entry rank", `{"name":"sortie-8-0-1","nodes":[{"rank":5,"state":"running"}]}`, "nodes[0].rank is 5"},
		{"an unknown state", `{"name":"sortie-8-0-1","nodes":[{"rank":0,"state":"\u001b[2J"}]}`, `nodes[0].state "\x1b[2J" is not a node state`},
		{"another name", `{"name":"../x","nodes":[]}`, `name "../x" is not the cluster's own`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t)
			bad, good := spec("sortie-8-0-1", pl("local", "local-a"), 1), spec("sortie-9-0-1", pl("local", "local-a"), 1)
			for _, s := range []provision.ClusterSpec{bad, good} {
				if _, err := p.Launch(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(p.clusterDir(bad.Name), "cluster.json")
			if err := os.WriteFile(path, []byte(tc.record), 0o600); err != nil {
				t.Fatal(err)
			}
			m, err := p.Status(ctx, []string{bad.Name, good.Name})
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if c := m[bad.Name]; c == nil || !strings.Contains(c.Broken, tc.want) || !strings.Contains(c.Broken, path) {
				t.Errorf("Status of the corrupt cluster: %+v, want it broken saying %q and naming %s", c, tc.want, path)
			}
			if c := m[good.Name]; c == nil || c.Broken != "" || c.Nodes[0].State != provision.NodeRunning {
				t.Errorf("Status of the sound cluster: %+v", c)
			}
			all, err := p.List(ctx)
			if err != nil || len(all) != 1 || all[0].Name != good.Name {
				t.Errorf("List = %v, %v; want the sound cluster only", all, err)
			}
			_, err = p.Launch(ctx, bad)
			if se := (*provision.StateError)(nil); !errors.As(err, &se) {
				t.Errorf("Launch over the corrupt record: %v, want a StateError", err)
			}
			if err := p.Terminate(ctx, bad.Name); err != nil {
				t.Fatal(err)
			}
			if m, _ := p.Status(ctx, []string{bad.Name}); m[bad.Name] != nil {
				t.Errorf("after Terminate: %+v", m[bad.Name])
			}
		})
	}
}

// FuzzClusterRecord checks, for any cluster.json: Status, List, Runner and
// Preempt never panic, and a record they accept has its nodes in rank order.
func FuzzClusterRecord(f *testing.F) {
	for _, s := range []string{
		`{"name":"sortie-8-0-1","placement":{"cloud":"local","region":"local","zone":"local-a"},"tags":{"sortie-managed":"true"},"nodes":[{"rank":0,"instance_id":"local-000001","state":"running"}]}`,
		`{"name":"sortie-8-0-1","nodes":[{"rank":1,"state":"running"}]}`,
		`null`, `{"nodes":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := New(Config{Home: t.TempDir()})
		ctx := context.Background()
		name := "sortie-8-0-1"
		if err := os.MkdirAll(filepath.Join(p.clusterDir(name), "node-0"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p.clusterDir(name), "cluster.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := p.Status(ctx, []string{name})
		if err != nil {
			t.Fatalf("Status: %v", err)
		}
		if _, err := p.List(ctx); err != nil {
			t.Fatalf("List: %v", err)
		}
		if c := m[name]; c != nil && c.Broken == "" {
			for i, n := range c.Nodes {
				if n.Rank != i {
					t.Errorf("node %d has rank %d", i, n.Rank)
				}
				if r, err := p.Runner(ctx, c, i); err == nil {
					r.Close()
				}
			}
		}
		p.Preempt(ctx, name, 0)
	})
}
