// Package controllercli is the command tree of the controller program:
// `run` the controller, and what the CLI asks of it because it needs a
// cloud SDK: `check` the clouds and read a running attempt's `node-logs`
// (both print JSON for the CLI to read), and `node-shell`, `jobs ssh` on a
// cloud node, attached to the user's terminal.
//
// Only sortie-controller links it: it imports the reconcile loop, the store
// and every cloud (controller/clouds/all), which the sortie command must not.
package controllercli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller"
	"sortie/controller/clouds"
	"sortie/controller/clouds/all"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/prices"
	"sortie/controller/service"
)

// exitStatus carries the exit status of a command run on a node.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Main runs the controller program's command line and returns its exit
// status.
func Main(args []string, out, errw io.Writer) int {
	h := home.FromEnv(os.Getenv)
	root := &cobra.Command{
		Use:           "sortie-controller",
		Short:         "The controller of SORTIE_HOME (started by the sortie CLI when needed)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(runCmd(h, errw), &cobra.Command{
		Use:   "check",
		Short: "Print, as JSON, which clouds are usable and why not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(h, os.Getenv)
			if err != nil {
				return err
			}
			return json.NewEncoder(out).Encode(clouds.NewSet(cfg, all.Clouds()).Check(cmd.Context()))
		},
	}, nodeLogs(h, out), pricesRefresh(h, out), nodeShell(h, out, errw), serverCmd(h, out, errw), dashboardCmd(h, out, errw))
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errw)
	if err := root.ExecuteContext(context.Background()); err != nil {
		if code, ok := err.(exitStatus); ok {
			return int(code)
		}
		fmt.Fprintln(errw, "error:", err)
		if _, ok := err.(*contract.UsageError); ok {
			return 2
		}
		return 1
	}
	return 0
}

func nodeLogs(h string, out io.Writer) *cobra.Command {
	var offsets string
	cmd := &cobra.Command{
		Use:   "node-logs JOB TASK ATTEMPT",
		Short: "Print, as JSON, what each node's log of a running attempt holds past --offsets",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			job, err1 := strconv.ParseInt(args[0], 10, 64)
			task, err2 := strconv.Atoi(args[1])
			attempt, err3 := strconv.Atoi(args[2])
			if err1 != nil || err2 != nil || err3 != nil {
				return fmt.Errorf("JOB TASK ATTEMPT: %q is not three numbers", strings.Join(args, " "))
			}
			var offs []int64
			for _, o := range strings.Split(offsets, ",") {
				if o == "" {
					continue
				}
				n, err := strconv.ParseInt(o, 10, 64)
				if err != nil {
					return fmt.Errorf("--offsets: %q is not a list of byte offsets", offsets)
				}
				offs = append(offs, n)
			}
			cfg, st, err := controller.OpenHome(ctx, h)
			if err != nil {
				return err
			}
			defer st.Close()
			as, err := st.Attempts(ctx, job)
			if err != nil {
				return fmt.Errorf("attempts of job %d: %w", job, err)
			}
			chunks := [][]byte{}
			for _, a := range as {
				if a.TaskIdx != task || a.Attempt != attempt || a.State != lifecycle.AttemptRunning {
					continue
				}
				prov, err := clouds.NewSet(cfg, all.Clouds()).Provider(ctx, a.Cloud)
				if err != nil {
					return err
				}
				if chunks, err = service.LiveLogs(ctx, prov, a, offs); err != nil {
					return err
				}
			}
			return json.NewEncoder(out).Encode(chunks)
		},
	}
	cmd.Flags().StringVar(&offsets, "offsets", "", "comma-separated byte offset of each node's log, by rank")
	return cmd
}

// pricesRefresh is `sortie prices refresh` of this home: it reads the
// prices from the clouds into the store and prints what each cloud
// answered, as JSON (contract.PricesRefreshed). A controller running here
// reads them from the store at its next refresh.
func pricesRefresh(h string, out io.Writer) *cobra.Command {
	var req contract.PricesRequest
	cmd := &cobra.Command{
		Use:   "prices-refresh",
		Short: "Read prices from the clouds now into the store, and print what each answered as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, st, err := controller.OpenHome(cmd.Context(), h)
			if err != nil {
				return err
			}
			defer st.Close()
			cls := all.Clouds()
			book := prices.NewBook(st, prices.Intervals{OnDemand: cfg.Prices.OnDemandRefresh.D(), Spot: cfg.Prices.SpotRefresh.D()}, nil)
			if err := book.Load(cmd.Context()); err != nil {
				return err
			}
			r := &prices.Refresher{Book: book, Store: st, Fetchers: clouds.PriceFetchers(cfg, cls), Fixed: clouds.FixedPriceKeys(cls),
				Now: time.Now, After: time.After}
			return json.NewEncoder(out).Encode(service.RefreshedView(r.Refresh(cmd.Context(), service.PriceRefresh(req))))
		},
	}
	cmd.Flags().StringVar(&req.Cloud, "cloud", "", "only this cloud")
	cmd.Flags().StringVar(&req.Type, "type", "", "only this instance type")
	cmd.Flags().StringVar(&req.Region, "region", "", "only this region")
	return cmd
}
