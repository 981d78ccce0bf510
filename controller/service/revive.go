package service

import (
	"context"
	"fmt"

	"sortie/controller/daemon"
)

// Revive starts the home's controller, as a launch does (StartDaemon), when
// the store holds unfinished jobs and neither a controller of the home nor
// live replicas drive them: a controller killed with -9 leaves RUNNING jobs
// that no one watches until something starts it again. A running
// controller is left alone (not even nudged), and so is a store without
// unfinished jobs. It returns the pid of the controller it started (0 when
// it started none) and how many unfinished jobs made it start one.
func (s *Service) Revive(ctx context.Context) (pid, unfinished int, err error) {
	if daemon.Running(s.Home) != 0 {
		return 0, 0, nil
	}
	if _, ok := replicasDrive(ctx, s.Store); ok {
		return 0, 0, nil
	}
	counts, err := s.Store.CountJobsByStatus(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("count the unfinished jobs: %w", err)
	}
	n := 0
	for st, c := range counts {
		if !st.Terminal() {
			n += c
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	if err := s.StartDaemon(ctx, s.Home); err != nil {
		return 0, n, err
	}
	return daemon.Running(s.Home), n, nil
}
