package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
)

// NewCmdPrices builds `prices [--cloud C] [--type T] [--region R]` and
// `prices refresh`.
func NewCmdPrices(f *Factory) *cobra.Command {
	var output string
	var req contract.PricesRequest
	cmd := &cobra.Command{
		Use:   "prices",
		Short: "Show what sortie charges per node-hour, and where each price came from",
		Long: `Show the prices sortie counts costs with, per node-hour, from its cache
of the clouds' prices: AWS's Price List API and spot price history, the
Cloud Billing Catalog for GCP, config.yaml for local, sim and kubernetes.
Each says where and when it was read; a stale price (its cloud could not
be reached since its refresh interval) makes a cost an estimate.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				ps, err := svc.Prices(cmd.Context(), req)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, orEmptyList(ps))
				}
				if len(ps) == 0 {
					fmt.Fprintln(f.Err, "No price is known yet: `sortie prices refresh --cloud C --region R --type T` reads one, and the controller reads those its jobs use.")
					return nil
				}
				t := newTable(f.Out, "CLOUD", "REGION", "ZONE", "TYPE", "KIND", "PER HOUR", "SOURCE", "READ")
				for _, p := range ps {
					kind := "on-demand"
					if p.Spot {
						kind = "spot"
					}
					read := "now"
					if p.ReadAt != nil {
						read = ago(f.Now(), *p.ReadAt)
					}
					if p.Stale {
						read += " (stale)"
					}
					t.row(p.Cloud, orAll(p.Region), orAll(p.Zone), orAll(p.InstanceType), kind,
						"$"+strconv.FormatFloat(p.PerHour, 'f', -1, 64), printable(p.Source), read)
				}
				return t.flush()
			})
		},
	}
	cmd.PersistentFlags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.PersistentFlags().StringVar(&req.Cloud, "cloud", "", "only this cloud's prices")
	cmd.PersistentFlags().StringVar(&req.Type, "type", "", "only this instance type's (for local, sim and kubernetes: a node's shape, cpus=4,memory=16,A100=1)")
	cmd.PersistentFlags().StringVar(&req.Region, "region", "", "only this region's")
	cmd.AddCommand(&cobra.Command{
		Use:   "refresh",
		Short: "Read the prices from the clouds now: those cached, and with --cloud, --region and --type that type's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				r, err := svc.RefreshPrices(cmd.Context(), req)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, r)
				}
				failed := 0
				if len(r.Clouds) == 0 {
					fmt.Fprintln(f.Err, "No price to read: name one with --cloud, --region and --type.")
				}
				for _, c := range r.Clouds {
					if c.Error != nil {
						failed++
						fmt.Fprintf(f.Err, "%s: %d of %d prices read; %s (the prices read before are kept)\n", c.Cloud, c.Quotes, c.Asked, printable(*c.Error))
						continue
					}
					fmt.Fprintf(f.Out, "%s: %d prices read\n", c.Cloud, c.Quotes)
				}
				if failed > 0 {
					return &exitError{code: ExitFailed}
				}
				return nil
			})
		},
	})
	return cmd
}

func orAll(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

func orEmptyList[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}
