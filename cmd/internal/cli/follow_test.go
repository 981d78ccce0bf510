package cli

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// followService is a job that says its steps, prints a line of log and
// then runs until the follow is stopped (block), or ends SUCCEEDED.
type followService struct {
	Service
	block   bool
	started chan struct{}
}

func (s *followService) Logs(ctx context.Context, req contract.LogsRequest, w io.Writer) error {
	if !req.Follow || req.Step == nil {
		return nil
	}
	req.Step("Attempt 1: placement chosen: sim/sim-east/sim-east-a, spot.")
	if req.Banner != nil {
		req.Banner(contract.AttemptView{Attempt: 1})
	}
	io.WriteString(w, "epoch 1\n")
	req.Step("Attempt 1 ended: user_failure, exit codes 1; restart.")
	req.Step("Restarting in 8s (back-off 1; restarts on error left 1 of 2).")
	if !s.block {
		return nil
	}
	close(s.started)
	<-ctx.Done()
	return ctx.Err()
}

func (s *followService) Show(context.Context, int64) (*contract.JobDetail, error) {
	return &contract.JobDetail{JobView: contract.JobView{ID: 7, Status: lifecycle.Succeeded},
		Tasks: []contract.TaskView{{MaxRestartsOnErrors: 2}}}, nil
}

func (s *followService) Close() error { return nil }

func TestFollowPrintsTheStepsOnStderr(t *testing.T) {
	f, out, errb := testFactory()
	svc := &followService{}
	f.Service = func(context.Context) (Service, error) { return svc, nil }
	if err := followToEnd(context.Background(), f, svc, 7); err != nil {
		t.Fatal(err)
	}
	if out.String() != "epoch 1\n" {
		t.Errorf("stdout %q, want the log alone", out)
	}
	want := "Attempt 1: placement chosen: sim/sim-east/sim-east-a, spot.\n" +
		"== job 7, task 0, attempt 1 ==\n" +
		"Attempt 1 ended: user_failure, exit codes 1; restart.\n" +
		"Restarting in 8s (back-off 1; restarts on error left 1 of 2).\n"
	if !strings.HasPrefix(errb.String(), want) {
		t.Errorf("stderr:\n%s\nwant it to begin:\n%s", errb, want)
	}
}

func TestCtrlCStopsFollowingNotTheJob(t *testing.T) {
	for _, argv := range [][]string{{"jobs", "logs", "-f", "7"}, {"jobs", "logs", "7", "--follow"}} {
		f, _, errb := testFactory()
		svc := &followService{block: true, started: make(chan struct{})}
		f.Service = func(context.Context) (Service, error) { return svc, nil }
		sig := make(chan os.Signal, 1)
		f.Interrupts = func() (<-chan os.Signal, func()) { return sig, func() {} }
		go func() {
			<-svc.started
			sig <- os.Interrupt
		}()
		code := Execute(f, argv)
		if code != ExitInterrupted {
			t.Errorf("%v: exit %d, want %d", argv, code, ExitInterrupted)
		}
		want := "\nStopped following job 7; the job goes on. Follow it again: sortie jobs logs -f 7 (cancel it: sortie jobs cancel 7)\n"
		if !strings.HasSuffix(errb.String(), want) {
			t.Errorf("%v: stderr:\n%s\nwant it to end:\n%s", argv, errb, want)
		}
		if strings.Contains(errb.String(), "error:") {
			t.Errorf("%v: Ctrl-C printed an error: %s", argv, errb)
		}
	}
}
