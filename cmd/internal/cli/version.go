package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"sortie/controller/api/client"
	"sortie/controller/contract"
	"sortie/controller/daemon"
)

// NewCmdVersion is `sortie version`: this program's version and, when
// the controller of SORTIE_HOME runs, the version of the program it runs
// (read from its executable, so a controller started before an upgrade
// shows as the older one); through a server, the server's address.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of sortie and of the running controller",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(f.Out, "client:     %s\n", contract.OwnVersion())
			// Through a server the jobs are its controller's, which
			// is not asked: this machine's home would say nothing of it.
			if c, err := client.FromEnv(f.Getenv); err == nil && c != nil {
				fmt.Fprintf(f.Out, "controller: the server's, at %s (its version is not asked)\n", printable(c.URL))
				return nil
			}
			fmt.Fprintf(f.Out, "controller: %s\n", controllerVersion(f.Home()))
			return nil
		},
	}
}

// controllerVersion says the version of the controller running for home,
// or that none runs. A server reached by SORTIE_API_URL is not asked.
func controllerVersion(h string) string {
	switch pid := daemon.Running(h); {
	case pid > 0:
		v, err := contract.VersionOfFile("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil {
			return fmt.Sprintf("running (pid %d), its version unknown: %v", pid, err)
		}
		return fmt.Sprintf("%s (pid %d)", v, pid)
	case pid < 0:
		return "starting, home " + h
	}
	return "not running, home " + h
}
