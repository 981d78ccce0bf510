package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"sortie/strategy"
)

// NewCmdFailures builds `jobs failures [forget KEY | --all]`.
func NewCmdFailures(f *Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "failures",
		Short: "List known failures: inputs that ended FAILED or FAILED_SETUP, which launch refuses to re-run (flaky ones too, never refused)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				fs, err := svc.Failures(cmd.Context())
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, fs)
				}
				if len(fs) == 0 {
					fmt.Fprintln(f.Err, "No known failures.")
					return nil
				}
				t := newTable(f.Out, "KEY", "JOB", "TASK", "STATUS", "EXIT CODES", "VERDICT", "EVIDENCE", "AGE", "LOGS")
				for _, k := range fs {
					logs := fmt.Sprintf("sortie jobs logs %d", k.JobID)
					if k.LogsRemovedAt != nil {
						logs = "removed " + ago(f.Now(), *k.LogsRemovedAt)
					}
					t.row(k.InputKey[:12], fmt.Sprint(k.JobID), k.TaskLabel(), string(k.Status), strategy.FormatExitCodes(k.ExitCodes),
						verdictText(k), evidenceText(k.Evidence), ago(f.Now(), k.RecordedAt), logs)
				}
				return t.flush()
			})
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	var all bool
	forget := &cobra.Command{
		Use:   "forget KEY | --all",
		Short: "Forget a known failure (by key prefix) or all of them, so launch runs those inputs again",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) == 1) {
				return usageErrorf("give a KEY (a prefix of it, as `sortie jobs failures` shows) or --all")
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				if all {
					n, err := svc.ForgetAllFailures(cmd.Context())
					if err == nil {
						fmt.Fprintf(f.Out, "Forgot %d known failure(s).\n", n)
					}
					return err
				}
				key, err := svc.ForgetFailure(cmd.Context(), args[0])
				if err == nil {
					fmt.Fprintf(f.Out, "Forgot known failure %s.\n", key)
				}
				return err
			})
		},
	}
	forget.Flags().BoolVar(&all, "all", false, "forget every known failure")
	cmd.AddCommand(forget)
	return cmd
}
