package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
	"sortie/provision"
)

// SSHOptions are `jobs ssh`'s flags and arguments.
type SSHOptions struct {
	ID   int64
	Node int
	// Argv is the command after --; empty opens an interactive shell.
	Argv []string
}

// NewCmdSSH builds `jobs ssh`.
func NewCmdSSH(f *Factory, runF func(context.Context, *SSHOptions) error) *cobra.Command {
	opts := &SSHOptions{}
	cmd := &cobra.Command{
		Use:   "ssh ID [--node N] [-- COMMAND ARGS...]",
		Short: "Open a shell (or run a command) where a failed job's task ran, with its environment, on the cluster keep_on_failure kept",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			ids := args
			if dash >= 0 {
				ids, opts.Argv = args[:dash], args[dash:]
			}
			if len(ids) != 1 {
				return usageErrorf("give one job id, then -- and the command to run, if any")
			}
			parsed, err := parseIDs(ids)
			if err != nil {
				return err
			}
			opts.ID = parsed[0]
			if opts.Node < 0 {
				return usageErrorf("--node %d: give a node's rank, 0 or more", opts.Node)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSSH(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().IntVar(&opts.Node, "node", 0, "the node's rank")
	return cmd
}

func runSSH(ctx context.Context, f *Factory, opts *SSHOptions) error {
	return withService(ctx, f, func(svc Service) error {
		stdio := provision.Stdio{In: f.In, Out: f.Out, Err: f.Err, Term: f.Getenv("TERM")}
		stdio.TTY = len(opts.Argv) == 0 && isTerminal(f.In)
		code, err := svc.Shell(ctx, contract.ShellRequest{ID: opts.ID, Node: opts.Node, Argv: opts.Argv, Stdio: stdio})
		if err != nil {
			return err
		}
		if code != 0 {
			return &exitError{code: code}
		}
		return nil
	})
}

// isTerminal says whether r is a terminal (a character device).
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
