package sim

import (
	"path/filepath"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/provisiontest"
	"sortie/schema"
)

func TestConformance(t *testing.T) {
	provisiontest.Run(t, provisiontest.Harness{
		New: func(t *testing.T) provision.Provider {
			p, err := Open(filepath.Join(t.TempDir(), "state.json"), Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return p
		},
		Reopen: func(t *testing.T, p provision.Provider) provision.Provider {
			p2, err := Open(p.(*Provider).store.path, Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p2.Close() })
			return p2
		},
		Preempt: func(t *testing.T, p provision.Provider, name string, rank int) {
			if err := p.(*Provider).Preempt(name, rank); err != nil {
				t.Fatal(err)
			}
		},
		NoCapacity: func(t *testing.T, p provision.Provider, at schema.Placement) {
			p.(*Provider).SetCapacity(at, 0)
		},
		Resources:    schema.Resources{Cloud: CloudName},
		RunsCommands: false,
		Timeout:      10 * time.Second,
	})
}

// A shared cloud passes the same suite, its reopening a second process's
// view of the same directory while the first still has it open.
func TestSharedConformance(t *testing.T) {
	provisiontest.Run(t, provisiontest.Harness{
		New: func(t *testing.T) provision.Provider {
			p, err := OpenShared(t.TempDir(), Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return p
		},
		Reopen: func(t *testing.T, p provision.Provider) provision.Provider {
			p2, err := OpenShared(p.(*Provider).shared.dir, Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p2.Close() })
			return p2
		},
		Preempt: func(t *testing.T, p provision.Provider, name string, rank int) {
			if err := p.(*Provider).Preempt(name, rank); err != nil {
				t.Fatal(err)
			}
		},
		NoCapacity: func(t *testing.T, p provision.Provider, at schema.Placement) {
			p.(*Provider).SetCapacity(at, 0)
		},
		Resources:    schema.Resources{Cloud: CloudName},
		RunsCommands: false,
		Timeout:      10 * time.Second,
	})
}
