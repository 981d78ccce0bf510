package cli

import (
	"cmp"
	"fmt"

	"github.com/spf13/cobra"
)

// NewCmdCheck builds `check`: which clouds are usable, and why not.
func NewCmdCheck(f *Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Say which clouds are usable, and exactly what is missing for the others",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			svc, err := f.Local(cmd.Context())
			if err != nil {
				return err
			}
			defer svc.Close()
			checks, err := svc.Check(cmd.Context())
			if err != nil {
				return err
			}
			// On stderr, so that -o json stays the list of clouds.
			if warning, err := svc.HomeWarning(); err != nil || warning != "" {
				fmt.Fprintf(f.Err, "warning: %s\n", cmp.Or(warning, fmt.Sprint(err)))
			}
			// The key the VM clouds log in with: made now when missing, so
			// that it can be put in place (an image, a bastion) before a launch.
			key, kerr := svc.SSHKey()
			if output == "json" {
				if kerr != nil {
					return kerr
				}
				return printJSON(f.Out, checks)
			}
			for _, c := range checks {
				state := "enabled"
				if !c.OK {
					state = "disabled"
				}
				fmt.Fprintf(f.Out, "%s: %s\n", c.Cloud, state)
				for _, d := range c.Details {
					fmt.Fprintf(f.Out, "  %s\n", printable(d))
				}
				for _, p := range c.Problems {
					fmt.Fprintf(f.Out, "  ✗ %s\n", printable(p))
				}
			}
			if kerr != nil {
				return kerr
			}
			made := ""
			if key.Created {
				made = ", created now"
			}
			fmt.Fprintf(f.Out, "ssh key: %s%s; its public key, which AWS and GCP instances accept:\n  %s\n", key.Path, made, key.PublicKey)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
