package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/daemon"
)

// NewCmdController builds `controller run|status|stop`.
func NewCmdController(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "controller", Short: "Run, inspect or stop the controller of SORTIE_HOME, or read its log"}
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the controller in the foreground (the CLI starts it in the background when needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return execController(f, "run")
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the controller runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch pid := daemon.Running(f.Home()); {
			case pid > 0:
				fmt.Fprintf(f.Out, "running (pid %d), home %s\n", pid, f.Home())
			case pid < 0:
				fmt.Fprintf(f.Out, "starting, home %s\n", f.Home())
			default:
				fmt.Fprintf(f.Out, "not running, home %s\n", f.Home())
				return &exitError{code: ExitFailed}
			}
			return nil
		},
	}
	stop := &cobra.Command{
		Use:   "stop",
		Short: "Stop the controller; running tasks keep running and are picked up at the next start",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pid, err := daemon.Stop(cmd.Context(), f.Home())
			if err != nil {
				return err
			}
			if pid == 0 {
				fmt.Fprintln(f.Out, "not running")
			} else {
				fmt.Fprintf(f.Out, "stopped (pid %d)\n", pid)
			}
			return nil
		},
	}
	cmd.AddCommand(run, status, stop, newCmdControllerLogs(f))
	return cmd
}

// controllerProgram runs the controller program once for what needs a
// cloud SDK, which this binary does not link, and returns its stdout.
func controllerProgram(ctx context.Context, f *Factory, args ...string) ([]byte, error) {
	bin, err := daemon.BinaryPath(f.Getenv)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "SORTIE_HOME="+f.Home())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", daemon.Binary, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// checkClouds asks the controller program which clouds are usable.
func checkClouds(f *Factory) func(ctx context.Context) ([]clouds.Check, error) {
	return func(ctx context.Context) ([]clouds.Check, error) {
		out, err := controllerProgram(ctx, f, "check")
		if err != nil {
			return nil, err
		}
		var checks []clouds.Check
		if err := json.Unmarshal(out, &checks); err != nil {
			return nil, fmt.Errorf("read %s check: %w", daemon.Binary, err)
		}
		return checks, nil
	}
}

// refreshPrices asks the controller program, which links the clouds'
// SDKs, to read prices from the clouds now.
func refreshPrices(f *Factory) func(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error) {
	return func(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error) {
		out, err := controllerProgram(ctx, f, "prices-refresh", "--cloud", req.Cloud, "--type", req.Type, "--region", req.Region)
		if err != nil {
			return nil, err
		}
		var r contract.PricesRefreshed
		if err := json.Unmarshal(out, &r); err != nil {
			return nil, fmt.Errorf("read %s prices-refresh: %w", daemon.Binary, err)
		}
		return &r, nil
	}
}

// remoteLogs asks the controller program for a running attempt's node logs
// on a cloud this binary does not link.
func remoteLogs(f *Factory) func(ctx context.Context, job int64, task, attempt int, offsets []int64) ([][]byte, error) {
	return func(ctx context.Context, job int64, task, attempt int, offsets []int64) ([][]byte, error) {
		offs := make([]string, len(offsets))
		for i, o := range offsets {
			offs[i] = strconv.FormatInt(o, 10)
		}
		out, err := controllerProgram(ctx, f, "node-logs", strconv.FormatInt(job, 10), strconv.Itoa(task),
			strconv.Itoa(attempt), "--offsets", strings.Join(offs, ","))
		if err != nil {
			return nil, err
		}
		var chunks [][]byte
		if err := json.Unmarshal(out, &chunks); err != nil {
			return nil, fmt.Errorf("read %s node-logs: %w", daemon.Binary, err)
		}
		return chunks, nil
	}
}

// remoteShell runs `jobs ssh` through the controller program for a cloud
// this binary does not link: its input and output are this command's, and
// its exit status the command's on the node.
func remoteShell(f *Factory) func(ctx context.Context, req contract.ShellRequest) (int, error) {
	return func(ctx context.Context, req contract.ShellRequest) (int, error) {
		bin, err := daemon.BinaryPath(f.Getenv)
		if err != nil {
			return 0, err
		}
		args := []string{"node-shell", strconv.FormatInt(req.ID, 10), "--node", strconv.Itoa(req.Node)}
		if len(req.Argv) > 0 {
			args = append(append(args, "--"), req.Argv...)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "SORTIE_HOME="+f.Home())
		cmd.Stdin, cmd.Stdout, cmd.Stderr = req.Stdio.In, req.Stdio.Out, req.Stdio.Err
		err = cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), nil
		}
		if err != nil {
			return 0, fmt.Errorf("%s node-shell: %w", daemon.Binary, err)
		}
		return 0, nil
	}
}
