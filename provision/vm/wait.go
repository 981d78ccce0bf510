package vm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sortie/provision"
	"sortie/provision/sshrun"
)

// Deadline paces a wait that polls: each Pause sleeps one interval, until
// the time is up.
type Deadline struct {
	now      func() time.Time
	interval time.Duration
	timeout  time.Duration
	at       time.Time
}

// NewDeadline starts a wait of at most timeout by the clock now, polling
// every interval.
func NewDeadline(now func() time.Time, interval, timeout time.Duration) *Deadline {
	return &Deadline{now: now, interval: interval, timeout: timeout, at: now().Add(timeout)}
}

// Pause sleeps one interval. It fails, naming what was awaited, when the
// deadline has passed or ctx ends first.
func (d *Deadline) Pause(ctx context.Context, what string) error {
	if !d.now().Before(d.at) {
		return fmt.Errorf("waited %s for %s", d.timeout, what)
	}
	t := time.NewTimer(d.interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	case <-t.C:
		return nil
	}
}

// AwaitSSH waits until every node of c runs a command over SSH, opening
// each with open (the backend's Runner) and pausing with d between tries:
// a booting VM refuses connections, and some clouds create sortie's user
// from metadata seconds after boot. A prechecks error or a changed host key
// ends the wait at once, since trying again cannot change them.
func AwaitSSH(ctx context.Context, c *provision.Cluster,
	open func(context.Context, *provision.Cluster, int) (provision.Runner, error), d *Deadline) error {
	for rank := range c.Nodes {
		for try := 1; ; try++ {
			err := probe(ctx, c, rank, open)
			if err == nil {
				break
			}
			var mismatch *sshrun.HostKeyMismatchError
			if provision.Classify(err) == provision.ClassPrechecks || errors.As(err, &mismatch) {
				return err
			}
			provision.Progress(ctx, fmt.Sprintf("waiting for SSH on node %d: %s, try %d", rank, sshReason(err), try))
			if perr := d.Pause(ctx, fmt.Sprintf("SSH on %s node %d", c.Name, rank)); perr != nil {
				return fmt.Errorf("%w; last error: %w", perr, err)
			}
		}
	}
	return nil
}

func probe(ctx context.Context, c *provision.Cluster, rank int,
	open func(context.Context, *provision.Cluster, int) (provision.Runner, error)) error {
	r, err := open(ctx, c, rank)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = r.Exec(ctx, "true", nil)
	return err
}

// sshReason is why a node did not answer SSH, in a few words: the common
// causes by name, else the error itself (cut short).
func sshReason(err error) string {
	msg := err.Error()
	for _, known := range []struct{ in, say string }{
		{"unable to authenticate", "unable to authenticate (the node does not accept sortie's key; `sortie check` prints it)"},
		{"connection refused", "connection refused"},
		{"no route to host", "no route to host"},
		{"i/o timeout", "connection timed out"},
		{"deadline exceeded", "connection timed out"},
		{"connection reset", "connection reset"},
		{"handshake failed", "SSH handshake failed"},
	} {
		if strings.Contains(msg, known.in) {
			return known.say
		}
	}
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return msg
}
