package local

import (
	"context"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/provisiontest"
	"sortie/schema"
)

// newProvider returns a provider over a fresh home; every cluster in it is
// terminated, and so every process it ran is killed, when the test ends.
func newProvider(t *testing.T) *Provider {
	t.Helper()
	p := New(Config{Home: t.TempDir()})
	t.Cleanup(func() { terminateAll(t, p) })
	return p
}

func terminateAll(t *testing.T, p *Provider) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names, err := p.clusterNames()
	if err != nil {
		t.Error(err)
		return
	}
	for name := range names {
		if err := p.Terminate(ctx, name); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

func TestConformance(t *testing.T) {
	provisiontest.Run(t, provisiontest.Harness{
		New: func(t *testing.T) provision.Provider { return newProvider(t) },
		Reopen: func(t *testing.T, p provision.Provider) provision.Provider {
			return New(Config{Home: p.(*Provider).home})
		},
		Preempt: func(t *testing.T, p provision.Provider, name string, rank int) {
			if err := p.(*Provider).Preempt(context.Background(), name, rank); err != nil {
				t.Fatal(err)
			}
		},
		NoCapacity: func(t *testing.T, p provision.Provider, at schema.Placement) {
			if err := SetCapacity(p.(*Provider).home, at, false); err != nil {
				t.Fatal(err)
			}
		},
		Resources:    schema.Resources{Cloud: CloudName},
		RunsCommands: true,
		Timeout:      time.Minute,
	})
}
