package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"

	"sortie/controller/contract"
)

// ExitInterrupted is the exit status of a follow stopped with Ctrl-C:
// 128 + SIGINT, as a shell reports a command the key ended, so that
// `sortie jobs launch task.yaml && next` does not go on as if the job had
// succeeded. The job itself goes on.
const ExitInterrupted = 130

// interrupts is where Ctrl-C is heard: the Factory's Interrupts, else
// SIGINT.
func (f *Factory) interrupts() (<-chan os.Signal, func()) {
	if f.Interrupts != nil {
		return f.Interrupts()
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	return ch, func() { signal.Stop(ch) }
}

// follow prints a job's logs to stdout and its steps to stderr (placement,
// instances, waiting for SSH, setup, run, each attempt's end and the
// back-off before the next) until it ends. Ctrl-C stops following, not the
// job: it says so and how to follow it again, and exits ExitInterrupted.
func follow(ctx context.Context, f *Factory, svc Service, req contract.LogsRequest) error {
	req.Follow = true
	req.Step = func(text string) { fmt.Fprintln(f.Err, printable(text)) }
	sig, stop := f.interrupts()
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var interrupted atomic.Bool
	go func() {
		select {
		case <-sig:
			interrupted.Store(true)
			cancel()
		case <-ctx.Done():
		}
	}()
	err := svc.Logs(ctx, req, f.Out)
	if interrupted.Load() {
		fmt.Fprintf(f.Err, "\nStopped following job %d; the job goes on. Follow it again: sortie jobs logs -f %d (cancel it: sortie jobs cancel %d)\n",
			req.ID, req.ID, req.ID)
		return &exitError{code: ExitInterrupted}
	}
	return err
}
