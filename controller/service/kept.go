package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sortie/controller/contract"
	"sortie/controller/store"
	"sortie/provision"
	"sortie/provision/node"
	"sortie/strategy"
)

// keptAttempt returns job id's kept attempt, or an error that says why
// there is none in the user's words.
func (s *Service) keptAttempt(ctx context.Context, id int64) (*store.Attempt, error) {
	j, err := s.job(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.mayAct(j, "reach the kept cluster of"); err != nil {
		return nil, err
	}
	if !j.Status.Terminal() {
		return nil, fmt.Errorf("job %d is %s: %w, so its cluster is not kept yet; read its output with `sortie jobs logs %d -f`",
			id, j.Status, contract.ErrJobRunning, id)
	}
	a, err := s.Store.KeptAttempt(ctx, id)
	if errors.Is(err, store.ErrNotKept) {
		why := "only a job that fails with resources.job_recovery.keep_on_failure keeps its cluster"
		return nil, fmt.Errorf("job %d ended %s and %w (%s); its logs: `sortie jobs logs %d`", id, j.Status, contract.ErrNotKept, why, id)
	}
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return a, nil
}

// released says that a's kept cluster is gone, or going, and since when.
func released(a *store.Attempt, now time.Time) error {
	switch {
	case a.ReleasedAt != nil:
		return fmt.Errorf("job %d: %w at %s (%s); its logs: `sortie jobs logs %d`", a.JobID, contract.ErrReleased,
			a.ReleasedAt.UTC().Format(time.RFC3339), a.ReleasedReason, a.JobID)
	case a.ReleaseRequested != "":
		return fmt.Errorf("job %d: %w: it is being torn down (%s); its logs: `sortie jobs logs %d`", a.JobID, contract.ErrReleased,
			a.ReleaseRequested, a.JobID)
	case !now.Before(*a.KeptUntil):
		return fmt.Errorf("job %d: %w: keep_on_failure ran out at %s and it is being torn down; its logs: `sortie jobs logs %d`",
			a.JobID, contract.ErrReleased, a.KeptUntil.UTC().Format(time.RFC3339), a.JobID)
	}
	return nil
}

// Release asks the controller to tear down job id's kept cluster now.
func (s *Service) Release(ctx context.Context, id int64) (*contract.ReleaseView, error) {
	a, err := s.keptAttempt(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.ReleasedAt != nil {
		return nil, released(a, s.Now())
	}
	if err := s.findDaemon(); err != nil {
		return nil, err
	}
	if a, err = s.Store.RequestRelease(ctx, id, strategy.ReleasedByUser); err != nil {
		if errors.Is(err, store.ErrReleased) {
			a, _ = s.Store.KeptAttempt(ctx, id)
			if a != nil {
				return nil, released(a, s.Now())
			}
		}
		return nil, fmt.Errorf("release job %d: %w", id, asSentinel(err))
	}
	if err := s.StartDaemon(ctx, s.Home); err != nil {
		return nil, err
	}
	return &contract.ReleaseView{JobID: id, Cluster: a.Cluster, KeptUntil: a.KeptUntil.UTC()}, nil
}

// releaseOnCancel asks, for a `jobs cancel` of ended jobs, that those
// that keep a cluster let it go; it returns the ids it asked for.
func (s *Service) releaseOnCancel(ctx context.Context, ids []int64) ([]int64, error) {
	var out []int64
	for _, id := range ids {
		j, err := s.Store.Job(ctx, id)
		if err != nil || !j.Status.Terminal() {
			continue
		}
		if a, err := s.Store.KeptAttempt(ctx, id); err != nil || a.ReleaseRequested != "" || a.ReleasedAt != nil {
			continue // nothing kept, or already asked
		}
		a, err := s.Store.RequestRelease(ctx, id, strategy.ReleasedByCancel)
		switch {
		case errors.Is(err, store.ErrNotKept), errors.Is(err, store.ErrReleased):
			continue
		case err != nil:
			return out, fmt.Errorf("release job %d: %w", id, err)
		}
		if a.ReleaseRequested == strategy.ReleasedByCancel {
			out = append(out, id)
		}
	}
	return out, nil
}

// Shell runs a command (or a shell) on a node of job id's kept cluster,
// where the failed attempt ran and with its environment, and returns the
// command's exit status. A cloud whose provider this process cannot open
// (it needs a cloud SDK) is asked of RemoteShell.
func (s *Service) Shell(ctx context.Context, req contract.ShellRequest) (int, error) {
	a, err := s.keptAttempt(ctx, req.ID)
	if err != nil {
		return 0, err
	}
	if err := released(a, s.Now()); err != nil {
		return 0, err
	}
	if n := len(a.InstanceIDs); req.Node < 0 || req.Node >= n {
		return 0, &contract.UsageError{Err: fmt.Errorf("--node %d: job %d's cluster %s has %s; give --node from 0 to %d",
			req.Node, req.ID, a.Cluster, plural(n, "node"), n-1)}
	}
	if !s.Clouds.Has(a.Cloud) {
		if s.RemoteShell == nil {
			return 0, fmt.Errorf("job %d ran on %s, which this program cannot reach", req.ID, a.Cloud)
		}
		return s.RemoteShell(ctx, req)
	}
	prov, err := s.Clouds.Provider(ctx, a.Cloud)
	if err != nil {
		return 0, err
	}
	return ShellOn(ctx, prov, a, req)
}

// ShellOn runs req on node req.Node of a's cluster through prov: the part
// of Shell the controller program does for clouds the CLI cannot reach.
func ShellOn(ctx context.Context, prov provision.Provider, a *store.Attempt, req contract.ShellRequest) (int, error) {
	got, err := prov.Status(ctx, []string{a.Cluster})
	if err != nil {
		return 0, fmt.Errorf("status of %s: %w", a.Cluster, err)
	}
	cl := got[a.Cluster]
	if cl == nil || req.Node >= len(cl.Nodes) {
		return 0, fmt.Errorf("job %d: %w: cluster %s is gone from %s", req.ID, contract.ErrReleased, a.Cluster, a.Cloud)
	}
	if st := cl.Nodes[req.Node].State; st != provision.NodeRunning {
		return 0, fmt.Errorf("job %d: node %d of cluster %s is %s, so there is nothing to reach", req.ID, req.Node, a.Cluster, st)
	}
	r, err := prov.Runner(ctx, cl, req.Node)
	if err != nil {
		return 0, fmt.Errorf("reach node %d of %s: %w", req.Node, a.Cluster, err)
	}
	defer r.Close()
	// Each attempt has a directory of its own on the node.
	return node.Shell(ctx, node.ForAttempt(r, a.Attempt), req.Argv, req.Stdio)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// asSentinel is err, a store's, answering errors.Is for the service's
// sentinel it stands for too: its message stays the store's.
func asSentinel(err error) error {
	for _, s := range []struct{ store, service error }{{store.ErrNotKept, contract.ErrNotKept}, {store.ErrReleased, contract.ErrReleased}} {
		if errors.Is(err, s.store) {
			return &sentinelError{err: err, is: s.service}
		}
	}
	return err
}

type sentinelError struct{ err, is error }

func (e *sentinelError) Error() string   { return e.err.Error() }
func (e *sentinelError) Unwrap() []error { return []error{e.err, e.is} }
