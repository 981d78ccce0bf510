package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
)

// NewCmdQuarantine builds `quarantine [list | clear PLACEMENT]`.
func NewCmdQuarantine(f *Factory) *cobra.Command {
	var output string
	list := func(cmd *cobra.Command, args []string) error {
		if err := outputFlag(output); err != nil {
			return err
		}
		return withService(cmd.Context(), f, func(svc Service) error {
			qs, err := svc.Quarantine(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				return printJSON(f.Out, qs)
			}
			if len(qs) == 0 {
				fmt.Fprintln(f.Err, "No placement is quarantined.")
				return nil
			}
			t := newTable(f.Out, "PLACEMENT", "UNTIL", "JOBS", "WEIGHT", "CAUSE")
			for _, q := range qs {
				jobs := make([]string, len(q.Jobs))
				for i, j := range q.Jobs {
					jobs[i] = strconv.FormatInt(j, 10)
				}
				t.row(q.Placement, q.Until.UTC().Format("15:04 MST")+" ("+until(f.Now(), q.Until)+")",
					strings.Join(jobs, ","), strconv.FormatFloat(q.Weight, 'f', 2, 64), q.Cause)
			}
			return t.flush()
		})
	}
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List placements set aside (zones, instance types in a zone, Kubernetes nodes): where different jobs lost their node or failed setup alike, which launches try last",
		Args:  cobra.NoArgs,
		RunE:  list,
	}
	cmd.PersistentFlags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the quarantined placements (the default)",
		Args:  cobra.NoArgs,
		RunE:  list,
	}, &cobra.Command{
		Use:   "clear PLACEMENT",
		Short: "Clear a quarantine (cloud/region/zone, cloud/region/zone/type=TYPE or cloud/region/node=NAME, as list shows it): the failures there so far no longer count",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			p, err := contract.ParsePlacement(args[0])
			if err != nil {
				return err
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				c, err := svc.ClearQuarantine(cmd.Context(), p)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, c)
				}
				fmt.Fprintln(f.Out, clearedText(c))
				return nil
			})
		},
	})
	return cmd
}

func clearedText(c *contract.QuarantineCleared) string {
	where := c.Placement
	if !c.WasQuarantined {
		return fmt.Sprintf("%s was not quarantined; failures there so far no longer count.", where)
	}
	return fmt.Sprintf("Cleared the quarantine of %s: launches try it in their own order again.", where)
}
