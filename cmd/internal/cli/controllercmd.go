package cli

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"sortie/controller"
)

// NewCmdController builds `controller run|status|stop`.
func NewCmdController(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "controller", Short: "Run, inspect or stop the controller daemon of SORTIE_HOME"}
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the controller in the foreground (the CLI starts it in the background when needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			d := &controller.Daemon{Home: f.Home(), Log: slog.New(slog.NewTextHandler(f.Err, nil)), Configure: configureClouds}
			return d.Run(cmd.Context())
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the controller runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch pid := controller.DaemonRunning(f.Home()); {
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
			pid, err := controller.StopDaemon(cmd.Context(), f.Home())
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
	cmd.AddCommand(run, status, stop)
	return cmd
}

// configureClouds adds the cloud providers built into this binary.
func configureClouds(ps *controller.ProviderSet) {
	ps.Extra["sim"] = controller.OpenSim
	ps.Extra["aws"] = controller.OpenAWS
	ps.Checks["aws"] = controller.CheckAWS
	ps.Extra["gcp"] = controller.OpenGCP
	ps.Checks["gcp"] = controller.CheckGCP
}
