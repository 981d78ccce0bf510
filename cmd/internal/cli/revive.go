package cli

import (
	"context"
	"fmt"
)

// reviver is what the service over this machine's home does that a
// server's client does not: a server runs its own controller.
type reviver interface {
	// Revive starts the home's controller as a launch does when unfinished
	// jobs wait and none runs; it returns the started controller's pid (0
	// when it started none) and how many jobs wait.
	Revive(ctx context.Context) (pid, unfinished int, err error)
}

// withJobsService is withService for the verbs that read jobs (queue, show,
// logs): on this machine's home, a controller that is gone (killed, the
// machine rebooted) while jobs are unfinished is started again first, and
// said so on stderr, so that what the verb shows moves on. Standard output
// is the verb's alone.
func withJobsService(ctx context.Context, f *Factory, fn func(Service) error) error {
	return withService(ctx, f, func(svc Service) error {
		if r, ok := svc.(reviver); ok {
			revive(ctx, f, r)
		}
		return fn(svc)
	})
}

// revive starts the controller when it should run and does not, and says
// what it did in one line; a controller that cannot be started is a
// warning, never the verb's failure.
func revive(ctx context.Context, f *Factory, r reviver) {
	pid, n, err := r.Revive(ctx)
	switch {
	case err != nil && n > 0:
		fmt.Fprintf(f.Err, "sortie: the controller is not running and %s wait for it; starting it failed: %s\n", jobsCount(n), printable(err.Error()))
	case err != nil:
		fmt.Fprintf(f.Err, "sortie: could not tell whether the controller should be started: %s\n", printable(err.Error()))
	case n > 0 && pid > 0:
		fmt.Fprintf(f.Err, "sortie: the controller was not running; started it (pid %d) to go on with %s\n", pid, jobsCount(n))
	case n > 0:
		fmt.Fprintf(f.Err, "sortie: the controller was not running; started it to go on with %s\n", jobsCount(n))
	}
}

// jobsCount is "1 unfinished job", "2 unfinished jobs".
func jobsCount(n int) string {
	if n == 1 {
		return "1 unfinished job"
	}
	return fmt.Sprintf("%d unfinished jobs", n)
}
