// Package cli is sortie's command tree: one file per verb, each with an
// options struct, a constructor and a run function. Every verb goes through
// the Service interface, so the same commands work against a remote
// controller.
//
// It must not import sortie/controller, controller/clouds/all or a cloud SDK:
// the CLI drives the service, never the reconcile loop, and links no cloud
// SDK. It must not import controller/store itself either: it speaks the
// service's types (controller/contract).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/schema"
	"sortie/strategy"
)

// Service is what the verbs need of a controller.
type Service interface {
	Launch(ctx context.Context, req contract.LaunchRequest) (*contract.JobView, error)
	Queue(ctx context.Context, req contract.QueueRequest) ([]contract.JobView, error)
	// QueueEach is Queue one job at a time, for -o json of long listings.
	QueueEach(ctx context.Context, req contract.QueueRequest, fn func(contract.JobView) error) error
	Show(ctx context.Context, id int64) (*contract.JobDetail, error)
	Logs(ctx context.Context, req contract.LogsRequest, w io.Writer) error
	CancelTargets(ctx context.Context, req contract.CancelRequest) ([]contract.JobView, error)
	Cancel(ctx context.Context, req contract.CancelRequest) ([]int64, error)
	// Release tears down a failed job's kept cluster now.
	Release(ctx context.Context, id int64) (*contract.ReleaseView, error)
	// SetPriority changes a waiting job's priority.
	SetPriority(ctx context.Context, id int64, priority int) (*contract.PriorityView, error)
	// Shell runs a command, or a shell, on a node of a failed job's kept
	// cluster and returns its exit status.
	Shell(ctx context.Context, req contract.ShellRequest) (int, error)
	RetryTargets(ctx context.Context, req contract.RetryRequest) ([]contract.JobView, error)
	Retry(ctx context.Context, req contract.RetryRequest) ([]contract.RetryResult, error)
	Failures(ctx context.Context) ([]contract.FailureView, error)
	ForgetFailure(ctx context.Context, prefix string) (string, error)
	ForgetAllFailures(ctx context.Context) (int64, error)
	// Quarantine lists the placements quarantined now; ClearQuarantine
	// makes the failures on one so far no longer count.
	Quarantine(ctx context.Context) ([]contract.QuarantineView, error)
	ClearQuarantine(ctx context.Context, k strategy.QuarantineKey) (*contract.QuarantineCleared, error)
	// Prices lists the prices sortie charges; RefreshPrices reads them
	// from the clouds now.
	Prices(ctx context.Context, req contract.PricesRequest) ([]contract.PriceView, error)
	RefreshPrices(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error)
	// Quotas lists the limits in effect; SetQuota and UnsetQuota change
	// one scope's (an admin).
	Quotas(ctx context.Context) ([]contract.QuotaView, error)
	SetQuota(ctx context.Context, req contract.QuotaRequest) (*contract.QuotaView, error)
	UnsetQuota(ctx context.Context, req contract.QuotaRequest) (*contract.QuotaView, error)
	// Usage is each user's hold against the limits and fair share.
	Usage(ctx context.Context) ([]contract.UsageView, error)
	Close() error
}

// Factory carries what every command needs.
type Factory struct {
	In       io.Reader
	Out, Err io.Writer
	Getenv   func(string) string
	// LookupEnv tells an unset variable from an empty one; nil takes an
	// empty value for unset.
	LookupEnv func(string) (string, bool)
	Now       func() time.Time
	// IsTerminal says whether a question can be asked on In; nil asks
	// whether standard input is a terminal.
	IsTerminal func() bool
	// Service opens the controller's service.
	Service func(ctx context.Context) (Service, error)
	// Local opens the service over this machine's home, also for commands
	// that only make sense here (controller, local, check).
	Local func(ctx context.Context) (LocalService, error)
	// Plan answers `jobs launch --dry-run`: it reads the task file and
	// config.yaml, and never the store nor the controller.
	Plan func(ctx context.Context, req contract.LaunchRequest) (*contract.Plan, error)
	// Sources lists the local inputs of a launch a server is sent, each
	// with its path here: what the client uploads first.
	Sources func(contract.LaunchRequest) (map[string]string, error)
	// Interrupts hears Ctrl-C while a job is followed, and stops hearing
	// it; nil listens for SIGINT.
	Interrupts func() (<-chan os.Signal, func())
}

// LocalService is the service over this machine's home: the verbs, and
// what only makes sense here.
type LocalService interface {
	Service
	Check(ctx context.Context) ([]clouds.Check, error)
	HomeWarning() (string, error)
	SSHKey() (contract.SSHKey, error)
	Preempt(ctx context.Context, id int64, rank int) (string, error)
	Notice(ctx context.Context, id int64, rank int, d time.Duration) (string, time.Time, error)
	SetCapacity(p schema.Placement, on bool) error
	Replicas(ctx context.Context) ([]contract.ReplicaView, error)
}

// Backend is the service's implementation, which the sortie program links
// in: this package speaks the contract alone, and so links no store.
type Backend struct {
	// Open opens the service over home, asking programs what needs a
	// cloud SDK this binary does not link.
	Open func(ctx context.Context, home string, programs Programs) (LocalService, error)
	// Plan answers `jobs launch --dry-run` from home's configuration.
	Plan func(ctx context.Context, home string, req contract.LaunchRequest) (*contract.Plan, error)
	// Sources lists a launch's local inputs (the Factory's Sources).
	Sources func(contract.LaunchRequest) (map[string]string, error)
}

// Programs are the controller program's answers to what needs a cloud
// SDK: which clouds are usable, a running attempt's node logs, and a
// shell on a kept node.
type Programs struct {
	CheckClouds   func(ctx context.Context) ([]clouds.Check, error)
	RemoteLogs    func(ctx context.Context, job int64, task, attempt int, offsets []int64) ([][]byte, error)
	RemoteShell   func(ctx context.Context, req contract.ShellRequest) (int, error)
	RefreshPrices func(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error)
}

func (f *Factory) lookupEnv(k string) (string, bool) {
	if f.LookupEnv != nil {
		return f.LookupEnv(k)
	}
	v := f.Getenv(k)
	return v, v != ""
}

// Home is $SORTIE_HOME, default ~/.sortie.
func (f *Factory) Home() string { return home.FromEnv(f.Getenv) }

// Exit statuses.
const (
	ExitOK           = 0
	ExitFailed       = 1
	ExitUsage        = 2
	ExitKnownFailure = 3
	// ExitBudgetSpent: the launch was refused because its owner's monthly
	// budget is spent (a team server's `server users budget`).
	ExitBudgetSpent = 4
)

// exitError carries an exit status without a message of its own.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs the command line and returns the process's exit status.
func Main(args []string, in io.Reader, out, errw io.Writer, b Backend) int {
	f := &Factory{In: in, Out: out, Err: errw, Getenv: os.Getenv, LookupEnv: os.LookupEnv, Now: time.Now, Sources: b.Sources}
	f.Local = func(ctx context.Context) (LocalService, error) {
		return b.Open(ctx, f.Home(), Programs{CheckClouds: checkClouds(f), RemoteLogs: remoteLogs(f), RemoteShell: remoteShell(f), RefreshPrices: refreshPrices(f)})
	}
	// With SORTIE_API_URL (or a `sortie login`), every jobs verb goes
	// through that server; without, through this machine's home.
	f.Service = func(ctx context.Context) (Service, error) {
		if r, err := remoteService(f); r != nil || err != nil {
			return r, err
		}
		return f.Local(ctx)
	}
	f.Plan = func(ctx context.Context, req contract.LaunchRequest) (*contract.Plan, error) {
		return b.Plan(ctx, f.Home(), req)
	}
	return Execute(f, args)
}

// Execute runs args against f and maps the outcome to an exit status.
func Execute(f *Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(f.In)
	root.SetOut(f.Out)
	root.SetErr(f.Err)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return ExitOK
	}
	code := exitCode(err)
	var ee *exitError
	if !errors.As(err, &ee) {
		printError(f.Err, err)
	}
	return code
}

// printError writes err for a person: several problems of a task file
// under a line that counts them, anything else on its own.
func printError(w io.Writer, err error) {
	if ve, ok := err.(*schema.ValidationError); ok && len(ve.Problems) > 1 {
		where := "in the task file"
		for _, p := range ve.Problems {
			if strings.HasPrefix(p.Path, "--") {
				where = "in the task file and the command line"
			}
		}
		fmt.Fprintf(w, "error: %d problems %s:\n%s\n", len(ve.Problems), where, printableLines(ve.Error()))
		return
	}
	fmt.Fprintln(w, "error:", printableLines(err.Error()))
}

func exitCode(err error) int {
	var ee *exitError
	var ve *schema.ValidationError
	var ue *contract.UsageError
	var kf *contract.KnownFailureError
	var be *contract.BudgetError
	var fe *flagError
	var ce *config.Error
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &kf):
		return ExitKnownFailure
	case errors.As(err, &be):
		return ExitBudgetSpent
	case errors.As(err, &ve), errors.As(err, &ue), errors.As(err, &fe), errors.As(err, &ce):
		return ExitUsage
	}
	return ExitFailed
}

// flagError is a command-line usage mistake.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }

func usageErrorf(format string, args ...any) error {
	return &flagError{err: fmt.Errorf(format, args...)}
}

// NewCmdRoot builds the whole command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "sortie",
		Short:         "Managed jobs on cloud clusters: launch, recover, retry, and remember what failed",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version says this program's; `sortie version` the
		// controller's too.
		Version: contract.OwnVersion().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &flagError{err: fmt.Errorf("%w\nSee '%s --help'", err, c.CommandPath())}
	})
	jobs := &cobra.Command{Use: "jobs", Short: "Launch and manage jobs"}
	jobs.AddCommand(NewCmdLaunch(f, nil), NewCmdQueue(f), NewCmdShow(f, nil), NewCmdLogs(f), NewCmdCancel(f, nil),
		NewCmdRetry(f, nil), NewCmdFailures(f), NewCmdSSH(f, nil), NewCmdRelease(f, nil), NewCmdPriority(f, nil))
	root.AddCommand(jobs, NewCmdController(f), NewCmdReplicas(f), NewCmdQuarantine(f), NewCmdPrices(f), NewCmdLocal(f), NewCmdCheck(f), NewCmdServer(f), NewCmdDashboard(f), NewCmdLogin(f), NewCmdVersion(f))
	for _, c := range root.Commands() {
		markArgs(c)
	}
	return root
}

// markArgs makes wrong positional arguments a usage error (exit status 2).
func markArgs(c *cobra.Command) {
	if c.Args != nil {
		orig := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := orig(cmd, args); err != nil {
				return &flagError{err: err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markArgs(sub)
	}
}

// withService opens the service for one command and closes it after.
func withService(ctx context.Context, f *Factory, fn func(Service) error) error {
	svc, err := f.Service(ctx)
	if err != nil {
		return err
	}
	defer svc.Close()
	return fn(svc)
}
