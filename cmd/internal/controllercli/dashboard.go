package controllercli

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"sortie/controller/api"
	"sortie/controller/api/dashboard"
	"sortie/controller/clouds/all"
	"sortie/controller/contract"
	"sortie/controller/service"
)

// dashboardCmd is `dashboard`: the web dashboard of the home, for its one
// user, on 127.0.0.1, signed in by a token made for this run alone.
func dashboardCmd(h string, out, errw io.Writer) *cobra.Command {
	var port int
	cmd := &cobra.Command{
		Use:   "dashboard [--port N]",
		Short: "Serve the web dashboard of SORTIE_HOME on 127.0.0.1, for you alone",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if port < 0 || port > 65535 {
				return &contract.UsageError{Err: fmt.Errorf("--port %d: give a port from 1 to 65535, or 0 for a free one", port)}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			svc, err := service.Open(ctx, h, all.Clouds())
			if err != nil {
				return err
			}
			defer svc.Close()
			// The token lives as long as this process: only who reads the
			// link printed here signs in, as the home's own user.
			tok, _, err := api.NewToken()
			if err != nil {
				return err
			}
			d, err := dashboard.New(dashboard.Options{Service: func(a *contract.Asker) dashboard.Service { return svc.As(a) }, Auth: dashboard.OneToken(tok, svc.Asker)})
			if err != nil {
				return err
			}
			onListen := func(addr net.Addr) {
				origins, err := dashboard.Origins("", addr, false)
				if err != nil {
					fmt.Fprintf(errw, "The dashboard's own address is unknown (%v): it takes no form.\n", err)
				}
				d.Serving(origins)
				fmt.Fprintf(out, "http://%s/?token=%s\n", addr, tok)
				fmt.Fprintf(errw, "The dashboard of %s, for %s: open the link above (it signs you in). Ctrl-C stops it.\n", h, svc.Asker.Name)
			}
			return api.Serve(ctx, d, api.ServeOptions{Listen: fmt.Sprintf("127.0.0.1:%d", port), OnListen: onListen})
		},
	}
	cmd.Flags().IntVar(&port, "port", 0, "the port on 127.0.0.1 (default: a free one)")
	return cmd
}
