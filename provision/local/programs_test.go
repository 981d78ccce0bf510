package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sortie/provision/node"
	"sortie/provision/node/agent"
)

// The nodes of a home find their agent in the home's programs directory:
// it is copied there by the first start and found there by the next
// cluster's, which copies nothing, and a torn-down node takes only its link
// away.
func TestLocalNodesShareTheHomesPrograms(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	var agents []string
	for _, name := range []string{"sortie-40-0-1", "sortie-41-0-1"} {
		c, err := p.Launch(ctx, spec(name, pl("local", "local-a"), 1))
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Runner(ctx, c, 0)
		if err != nil {
			t.Fatal(err)
		}
		ar := node.ForAttempt(r, 1)
		if err := node.Start(ctx, ar, node.StartSpec{Run: "true"}); err != nil {
			t.Fatal(err)
		}
		if target, err := os.Readlink(filepath.Join(r.Dir(), programsLink)); err != nil || target != programsDir(p.home) {
			t.Fatalf("the node's programs are %q (%v), want a link to %s", target, err, programsDir(p.home))
		}
		link, err := os.Readlink(filepath.Join(ar.Dir(), agent.FileAgent))
		if err != nil {
			t.Fatal(err)
		}
		real, err := filepath.EvalSymlinks(link)
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, real)
		waitFor(t, "the task's end", func() bool { return poll(t, ar).Done })
	}
	if agents[0] != agents[1] || !strings.HasPrefix(agents[0], programsDir(p.home)+"/") {
		t.Errorf("the nodes ran %s and %s; want one program in %s", agents[0], agents[1], programsDir(p.home))
	}
	sums, _ := os.ReadDir(programsDir(p.home))
	if len(sums) != 1 {
		t.Errorf("the home's programs directory holds %d entries, want one agent build's", len(sums))
	}
	if err := p.Terminate(ctx, "sortie-40-0-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(agents[0]); err != nil {
		t.Errorf("the agent went with a torn-down node: %v", err)
	}
}
