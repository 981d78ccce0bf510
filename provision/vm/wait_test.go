package vm

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"sortie/provision"
	"sortie/provision/sshrun"
	"sortie/strategy/clocktest"
)

func newClock() *clocktest.Clock { return clocktest.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }

// deadline is a minute's wait whose pauses do not sleep.
func deadline(c *clocktest.Clock) *Deadline { return NewDeadline(c.Now, 0, time.Minute) }

// longDeadline is a wait whose pauses would sleep an hour.
func longDeadline(c *clocktest.Clock) *Deadline { return NewDeadline(c.Now, time.Hour, 2*time.Hour) }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDeadlinePause(t *testing.T) {
	c := newClock()
	d := deadline(c)
	if err := d.Pause(context.Background(), "x"); err != nil {
		t.Errorf("before the deadline: %v", err)
	}
	c.Advance(time.Minute)
	if err := d.Pause(context.Background(), "instances of c to run"); errText(err) != "waited 1m0s for instances of c to run" {
		t.Errorf("at the deadline: %v", err)
	}
	// A long interval is cut short by the context, not slept through.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := longDeadline(c).Pause(ctx, "SSH")
	if !errors.Is(err, context.Canceled) || !strings.Contains(errText(err), "waiting for SSH") {
		t.Errorf("cancelled: %v", err)
	}
}

// runner is an open connection to a node; err is what probing it returns.
type runner struct {
	n   *node
	err error
}

// node counts what AwaitSSH did to it.
type node struct {
	opens, execs, closes int
	fails                []error // what each open returns until it runs out
}

func (r runner) Exec(_ context.Context, script string, _ io.Reader) ([]byte, error) {
	r.n.execs++
	if script != "true" {
		return nil, errors.New("unexpected script " + script)
	}
	return nil, r.err
}
func (r runner) Dir() string  { return "/" }
func (r runner) Close() error { r.n.closes++; return nil }

func opener(nodes []*node, execErr error) func(context.Context, *provision.Cluster, int) (provision.Runner, error) {
	return func(_ context.Context, _ *provision.Cluster, rank int) (provision.Runner, error) {
		n := nodes[rank]
		n.opens++
		if len(n.fails) > 0 {
			err := n.fails[0]
			n.fails = n.fails[1:]
			return nil, err
		}
		return runner{n: n, err: execErr}, nil
	}
}

func TestAwaitSSH(t *testing.T) {
	cluster := &provision.Cluster{Name: "c", Nodes: []provision.Node{{Rank: 0}, {Rank: 1}}}
	refused := errors.New("connection refused")

	nodes := []*node{{fails: []error{refused, refused}}, {}}
	if err := AwaitSSH(context.Background(), cluster, opener(nodes, nil), deadline(newClock())); err != nil {
		t.Fatal(err)
	}
	if nodes[0].opens != 3 || nodes[1].opens != 1 || nodes[0].execs != 1 || nodes[1].execs != 1 {
		t.Errorf("opens %d, %d and probes %d, %d; want 3, 1 and 1, 1", nodes[0].opens, nodes[1].opens, nodes[0].execs, nodes[1].execs)
	}
	if nodes[0].closes != 1 || nodes[1].closes != 1 {
		t.Errorf("runners closed %d, %d times; want each once", nodes[0].closes, nodes[1].closes)
	}

	for _, tc := range []struct {
		name string
		err  error
	}{
		{"prechecks", provision.Prechecks(errors.New("no permission to describe"))},
		{"host key changed", &sshrun.HostKeyMismatchError{ID: "i-0"}},
	} {
		nodes := []*node{{fails: []error{tc.err}}, {}}
		err := AwaitSSH(context.Background(), cluster, opener(nodes, nil), longDeadline(newClock()))
		if !errors.Is(err, tc.err) || nodes[0].opens != 1 || nodes[1].opens != 0 {
			t.Errorf("%s: %v after %d opens; want the error at once", tc.name, err, nodes[0].opens)
		}
	}

	// A node that never answers fails the wait at the deadline, naming
	// the node and keeping the last error.
	c := newClock()
	d := deadline(c)
	c.Advance(time.Hour)
	err := AwaitSSH(context.Background(), cluster, opener([]*node{{}, {}}, refused), d)
	if !errors.Is(err, refused) || errText(err) != "waited 1m0s for SSH on c node 0; last error: connection refused" {
		t.Errorf("never answering: %v", err)
	}
}

// Each failed try says what the wait is for and why, through the launch's
// progress report.
func TestAwaitSSHReportsWhyItWaits(t *testing.T) {
	cluster := &provision.Cluster{Name: "c", Nodes: []provision.Node{{Rank: 0}, {Rank: 1}}}
	denied := errors.New("ssh ubuntu@10.0.0.1:22 (i-0): ssh: handshake failed: ssh: unable to authenticate, attempted methods [none publickey], no supported methods remain")
	refused := errors.New("dial tcp 10.0.0.2:22: connect: connection refused")
	var got []string
	ctx := provision.WithProgress(context.Background(), func(msg string) { got = append(got, msg) })
	nodes := []*node{{fails: []error{denied, denied}}, {fails: []error{refused}}}
	if err := AwaitSSH(ctx, cluster, opener(nodes, nil), deadline(newClock())); err != nil {
		t.Fatal(err)
	}
	auth := "unable to authenticate (the node does not accept sortie's key; `sortie check` prints it)"
	want := []string{
		"waiting for SSH on node 0: " + auth + ", try 1",
		"waiting for SSH on node 0: " + auth + ", try 2",
		"waiting for SSH on node 1: connection refused, try 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
