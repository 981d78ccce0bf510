package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"sortie/controller/api/client"
	"sortie/controller/daemon"
)

// NewCmdServer builds `server`, which the controller program runs: the
// API and the controller of SORTIE_HOME, and `server users`.
func NewCmdServer(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "server [--listen ADDR] [--store URL] [--replica NAME [--lease-ttl D]] [--tls-cert F --tls-key F] [--insecure] | server users add|list|revoke|budget | server usage [-o json] | server quotas [set|unset] | server status [-o json]",
		Short: "Serve SORTIE_HOME's API to a team (users, tokens), running its controller",
		Long: "Run the HTTP API over this home's jobs, and its controller, in the controller program.\n" +
			"`sortie server users add NAME [--admin]` prints a new user's token once; `users list` (with each one's budget, spent and left this month);\n" +
			"`users revoke NAME`; `users budget NAME DOLLARS|none|default` sets a user's monthly budget.\n" +
			"`sortie server usage [-o json]` shows each user with jobs running or waiting: what they hold against the limits,\n" +
			"their fair-share weight, their decayed use and share of everyone's, and how many jobs they have waiting.\n" +
			"`sortie server quotas` lists the limits in effect; an admin changes them with `quotas set` and `quotas unset`.\n" +
			"Beyond 127.0.0.1 the server needs --tls-cert and --tls-key, or --insecure.\n" +
			"With --replica NAME the server is one of several on one store (PostgreSQL), each driving the jobs it leases;\n" +
			"`sortie server status` lists them and the jobs each holds.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && args[0] == "quotas" {
				// Through the service the CLI speaks to: the server's
				// API with SORTIE_API_URL, else this home's store.
				q := NewCmdQuotas(f)
				q.SetArgs(args[1:])
				q.SetOut(f.Out)
				q.SetErr(f.Err)
				q.SilenceUsage, q.SilenceErrors = true, true
				q.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErrorf("%v", err) })
				return q.ExecuteContext(cmd.Context())
			}
			if len(args) > 0 && args[0] == "usage" {
				// Through the server with SORTIE_API_URL (or a login);
				// on the server's machine the controller program reads
				// its store (`--store URL` as `server` takes it).
				if r, err := remoteService(f); err != nil {
					return err
				} else if r != nil {
					r.Close()
					u := NewCmdUsage(f)
					u.SetArgs(args[1:])
					u.SetOut(f.Out)
					u.SetErr(f.Err)
					u.SilenceUsage, u.SilenceErrors = true, true
					u.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErrorf("%v", err) })
					return u.ExecuteContext(cmd.Context())
				}
			}
			if len(args) > 0 && args[0] == "status" {
				// The replicas sharing the store: read here, as
				// `replicas status` reads them.
				st := NewCmdReplicas(f)
				st.SetArgs(append([]string{"status"}, args[1:]...))
				st.SetOut(f.Out)
				st.SetErr(f.Err)
				return st.ExecuteContext(cmd.Context())
			}
			return execController(f, "server", args...)
		},
	}
}

// NewCmdDashboard builds `dashboard`, which the controller program runs:
// the web dashboard of SORTIE_HOME on 127.0.0.1, for its one user.
func NewCmdDashboard(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "dashboard [--port N]",
		Short: "Serve the web dashboard of SORTIE_HOME on 127.0.0.1 and print a link that signs you in",
		Long: "Serve the queue, each job's attempts and logs, retries and known failures as web pages on 127.0.0.1\n" +
			"(a free port, or --port N), for you alone: the link printed carries a token made for this run.\n" +
			"It opens no browser. Ctrl-C stops it. A team's `sortie server` serves the same dashboard at its address.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return execController(f, "dashboard", args...)
		},
	}
}

// execController runs the controller program's verb with args in this
// process's place, so that signals and the exit status are its own.
func execController(f *Factory, verb string, args ...string) error {
	bin, err := daemon.BinaryPath(f.Getenv)
	if err != nil {
		return err
	}
	env := append(os.Environ(), "SORTIE_HOME="+f.Home())
	return syscall.Exec(bin, append([]string{bin, verb}, args...), env)
}

// NewCmdLogin builds `login URL`: it checks the token with the server and
// keeps both for the user alone.
func NewCmdLogin(f *Factory) *cobra.Command {
	var token string
	cmd := &cobra.Command{
		Use:   "login URL",
		Short: "Point the CLI at a sortie server: keep its URL and your token in ~/.config/sortie/",
		Long: "Read the token from --token or standard input, check it with the server, and keep both in\n" +
			"$XDG_CONFIG_HOME/sortie/login.json (default ~/.config/sortie/), readable by you alone.\n" +
			"From then on every `jobs` verb goes through the server; SORTIE_API_URL and SORTIE_TOKEN win over it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := strings.TrimRight(args[0], "/")
			if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
				return usageErrorf("URL %q: give the server's address with its scheme, e.g. https://sortie.example.com:8080", args[0])
			}
			if token == "" {
				line, err := bufio.NewReader(f.In).ReadString('\n')
				if err != nil && line == "" {
					return usageErrorf("no token: pass --token TOKEN or give it on standard input")
				}
				token = strings.TrimSpace(line)
			}
			if token == "" {
				return usageErrorf("the token is empty: pass --token TOKEN or give it on standard input")
			}
			c := client.New(url, token, f.Getenv)
			me, err := c.Me(cmd.Context())
			if err != nil {
				return err
			}
			p, err := client.SaveLogin(f.Getenv, client.Login{URL: url, Token: token})
			if err != nil {
				return fmt.Errorf("keep the login: %w", err)
			}
			admin := ""
			if me.Admin {
				admin = " (admin)"
			}
			fmt.Fprintf(f.Out, "Logged in to %s as %s%s; kept in %s.\n", url, me.Name, admin, p)
			return nil
		},
	}
	cmd.Flags().StringVar(&token, "token", "", "the token (default: read from standard input)")
	return cmd
}

// remoteService is the server the CLI speaks to, nil when none is set.
func remoteService(f *Factory) (Service, error) {
	c, err := client.FromEnv(f.Getenv)
	if err != nil || c == nil {
		return nil, err
	}
	c.Sources = f.Sources
	return c, nil
}
