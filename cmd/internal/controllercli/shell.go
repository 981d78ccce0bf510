package controllercli

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"sortie/controller/clouds/all"
	"sortie/controller/contract"
	"sortie/controller/service"
	"sortie/provision"
)

// nodeShell is `jobs ssh` for a node of a cloud: the CLI runs it with its
// own standard input and output, and exits with its status.
func nodeShell(h string, out, errw io.Writer) *cobra.Command {
	var rank int
	cmd := &cobra.Command{
		Use:   "node-shell JOB [--node N] [-- COMMAND ARGS...]",
		Short: "Run a command, or a shell, on a node of a failed job's kept cluster",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var argv []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args, argv = args[:dash], args[dash:]
			}
			if len(args) != 1 {
				return fmt.Errorf("JOB: give one job id, got %q", args)
			}
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf("JOB: %q is not a job id", args[0])
			}
			svc, err := service.Open(ctx, h, all.Clouds())
			if err != nil {
				return err
			}
			defer svc.Close()
			stdio := provision.Stdio{In: os.Stdin, Out: out, Err: errw, Term: os.Getenv("TERM")}
			if len(argv) == 0 {
				restore, rows, cols, ok := rawTerminal(int(os.Stdin.Fd()))
				if ok {
					defer restore()
					stdio.TTY, stdio.Rows, stdio.Cols = true, rows, cols
				}
			}
			code, err := svc.Shell(ctx, contract.ShellRequest{ID: id, Node: rank, Argv: argv, Stdio: stdio})
			if err != nil {
				return err
			}
			if code != 0 {
				return exitStatus(code)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&rank, "node", 0, "the node's rank")
	return cmd
}

// rawTerminal puts the terminal on fd in raw mode, as an SSH client does
// for a remote pty, and returns how to restore it and its size; ok is
// false when fd is no terminal.
func rawTerminal(fd int) (restore func(), rows, cols int, ok bool) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, 0, 0, false
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, 0, 0, false
	}
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
		rows, cols = int(ws.Row), int(ws.Col)
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, rows, cols, true
}
