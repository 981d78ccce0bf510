package controllercli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"sortie/controller"
	"sortie/controller/api"
	"sortie/controller/api/dashboard"
	"sortie/controller/clouds"
	"sortie/controller/clouds/all"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/service"
	"sortie/controller/store"
)

// serverCmd is `server`: the API beside the controller of the home, and
// `server users` over the same store.
func serverCmd(h string, out, errw io.Writer) *cobra.Command {
	var o struct {
		listen, storePath, cert, key string
		publicURL                    string
		insecure                     bool
		maxBody, maxUpload           int64
		replica                      string
		ttl                          time.Duration
	}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve the API (and run the controller) of SORTIE_HOME for a team",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			useTLS := o.cert != "" || o.key != ""
			if err := api.CheckListen(o.listen, useTLS, o.insecure); err != nil {
				return &contract.UsageError{Err: err}
			}
			if o.publicURL != "" {
				if err := dashboard.PublicURL(o.publicURL); err != nil {
					return &contract.UsageError{Err: fmt.Errorf("--url %w", err)}
				}
			}
			if o.replica == "" && cmd.Flags().Changed("lease-ttl") {
				return &contract.UsageError{Err: fmt.Errorf("--lease-ttl is for replicas: give --replica NAME too")}
			}
			log := slog.New(slog.NewJSONHandler(errw, nil))
			opts := controller.ServeOptions{Store: o.storePath, Server: true,
				Beside: func(ctx context.Context, c *controller.Controller, st *store.Store) error {
					base, err := service.Open(ctx, h, clouds.Light())
					if err != nil {
						return err
					}
					// The verbs share the controller's store rather than
					// open a second one.
					base.Store.Close()
					base.Store = st
					// A refresh asked of the API runs in the
					// controller's own refresher, whose Book the
					// controller reads.
					base.RefreshPricesHook = func(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error) {
						return service.RefreshedView(c.PriceRefresher.Refresh(ctx, service.PriceRefresh(req))), nil
					}
					up := &api.Uploads{Dir: home.Uploads(h)}
					svc := api.ForServer(base, up, c.Wake)
					srv := api.NewServer(api.Options{Service: svc, Store: st, Uploads: up, Log: log, MaxBody: o.maxBody, MaxUpload: o.maxUpload})
					// The dashboard at / beside the API at /v1/: the same
					// users, the same verbs.
					dash, err := dashboard.New(dashboard.Options{Service: func(a *contract.Asker) dashboard.Service { return svc.As(a) }, Auth: api.TokenAuth(st), Log: log})
					if err != nil {
						return err
					}
					onListen := func(addr net.Addr) {
						// Forms are taken from pages of the public address
						// alone, else of the address listened on.
						origins, err := dashboard.Origins(o.publicURL, addr, useTLS)
						if err != nil {
							log.Error("the dashboard's own address is unknown: it takes no form", "err", err)
						}
						dash.Serving(origins)
						// `server users add` links users to this address.
						own := cmp.Or(strings.TrimRight(o.publicURL, "/"), scheme(useTLS)+"://"+addr.String())
						if err := home.WriteFileAtomic(home.ServerURL(h), []byte(own+"\n"), home.FileMode); err != nil {
							log.Warn("the server's address is not recorded for `server users add`", "err", err)
						}
						log.Info("serving the dashboard", "url", scheme(useTLS)+"://"+addr.String()+"/", "origins", origins)
					}
					return api.Serve(ctx, dashboard.Mount(srv, dash), api.ServeOptions{Listen: o.listen, TLSCert: o.cert, TLSKey: o.key,
						Insecure: o.insecure, Log: log, OnListen: onListen})
				}}
			if o.replica != "" {
				// One of several servers on one store: the API serves every
				// job, the loop drives the ones this replica leases.
				return controller.ServeReplica(cmd.Context(), h, controller.ReplicaOptions{Name: o.replica, TTL: o.ttl}, log, all.Clouds(), opts)
			}
			return controller.ServeWith(cmd.Context(), h, log, all.Clouds(), opts)
		},
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&o.storePath, "store", "", "the store: postgres://USER@HOST/DB, sqlite:PATH or a path (default: controller.store, SORTIE_STORE, else SORTIE_HOME's state.db)")
	cmd.Flags().StringVar(&o.replica, "replica", "", "serve as the replica NAME of a store shared with other servers (PostgreSQL), driving the jobs it leases")
	cmd.Flags().DurationVar(&o.ttl, "lease-ttl", controller.DefaultLeaseTTL, "how long a replica's leases last unless renewed (at least 3s)")
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:8080", "host:port to serve on; beyond loopback needs TLS or --insecure")
	cmd.Flags().StringVar(&o.publicURL, "url", "", "the server's address as users' browsers reach it (scheme://host:port), when it is not the --listen address: behind a proxy, or by a name; the dashboard takes forms from it alone")
	cmd.Flags().StringVar(&o.cert, "tls-cert", "", "TLS certificate (PEM); with --tls-key the server speaks HTTPS")
	cmd.Flags().StringVar(&o.key, "tls-key", "", "TLS private key (PEM)")
	cmd.Flags().BoolVar(&o.insecure, "insecure", false, "serve plain HTTP beyond loopback: tokens cross the network in the clear")
	cmd.Flags().Int64Var(&o.maxBody, "max-body", api.DefaultMaxBody, "largest JSON request body, in bytes")
	cmd.Flags().Int64Var(&o.maxUpload, "max-upload", api.DefaultMaxUpload, "largest upload (a workdir or file mount), in bytes")
	cmd.AddCommand(usersCmd(h, out, errw, &o.storePath), usageCmd(h, out, &o.storePath))
	return cmd
}

func scheme(useTLS bool) string {
	if useTLS {
		return "https"
	}
	return "http"
}

func usersCmd(h string, out, errw io.Writer, storePath *string) *cobra.Command {
	open := func(ctx context.Context) (*store.Store, error) {
		u := *storePath
		if u == "" {
			if err := home.Make(h); err != nil {
				return nil, err
			}
			cfg, err := config.Load(h, os.Getenv)
			if err != nil {
				return nil, err
			}
			u = cfg.StoreURL()
		}
		return store.OpenURL(ctx, u, nil)
	}
	users := &cobra.Command{Use: "users", Short: "Add, list and revoke the users of the server, and set their monthly budgets"}
	var admin bool
	var dashURL string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a user and print their token, once: only its hash is kept",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := store.ValidUserName(args[0]); err != nil {
				return &contract.UsageError{Err: err}
			}
			st, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			tok, hash, err := api.NewToken()
			if err != nil {
				return err
			}
			if err := st.AddUser(cmd.Context(), args[0], hash, admin); err != nil {
				return &contract.UsageError{Err: fmt.Errorf("%w: pick another name, or revoke theirs and add them under a new one", err)}
			}
			fmt.Fprintln(out, tok)
			fmt.Fprintf(errw, "User %s added%s. The token above is shown once: give it to them for `sortie login URL`.\n", args[0], map[bool]string{true: " (admin)"}[admin])
			fmt.Fprintf(errw, "Their dashboard link, which signs them in: %s/?token=%s\n", dashURL, tok)
			return nil
		},
	}
	add.Flags().BoolVar(&admin, "admin", false, "the user may cancel, retry and forget every user's jobs")
	add.Flags().StringVar(&dashURL, "url", "", "the server's address as users reach it, for the dashboard link printed (default: the address `sortie server` of this home last served on, its --url or --listen, else http://127.0.0.1:8080)")
	add.PreRunE = func(cmd *cobra.Command, args []string) error {
		if dashURL == "" {
			dashURL = "http://127.0.0.1:8080"
			if b, err := os.ReadFile(home.ServerURL(h)); err == nil && strings.TrimSpace(string(b)) != "" {
				dashURL = strings.TrimSpace(string(b))
			}
		}
		u, err := url.Parse(dashURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return &contract.UsageError{Err: fmt.Errorf("--url %q: give the server's address with its scheme, e.g. https://sortie.example.com:8443", dashURL)}
		}
		dashURL = strings.TrimRight(dashURL, "/")
		return nil
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			us, err := st.Users(cmd.Context())
			if err != nil {
				return err
			}
			cfg, err := config.Load(h, os.Getenv)
			if err != nil {
				return err
			}
			own, err := st.Budgets(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			spent, err := st.Spent(cmd.Context(), "", store.MonthStart(now), now)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tADMIN\tCREATED\tREVOKED\tBUDGET\tSPENT\tLEFT")
			for _, u := range us {
				revoked := "-"
				if u.RevokedAt != nil {
					revoked = u.RevokedAt.UTC().Format(time.RFC3339)
				}
				budget, left := budgetColumns(own, cfg.Budgets.Monthly, u.Name, spent[u.Name])
				fmt.Fprintf(tw, "%s\t%t\t%s\t%s\t%s\t%s\t%s\n", u.Name, u.Admin, u.CreatedAt.UTC().Format(time.RFC3339), revoked,
					budget, showDollars(spent[u.Name]), left)
			}
			return tw.Flush()
		},
	}
	budget := &cobra.Command{
		Use:   "budget NAME DOLLARS|none|default",
		Short: "Set a user's monthly budget: a launch of theirs is refused once their jobs cost that much this month (UTC)",
		Long: "Set what a user's jobs may cost in a calendar month (UTC), in dollars. Once they have, their launches and retries are refused\n" +
			"(exit status 4) and their running jobs finish or are stopped as config.yaml's budgets.when_spent says.\n" +
			"`none` gives them no budget whatever config.yaml's budgets.monthly says; `default` gives them that default again.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, value := args[0], strings.TrimPrefix(strings.TrimSpace(args[1]), "$")
			var monthly *float64
			clear := false
			switch strings.ToLower(value) {
			case "none":
			case "default":
				clear = true
			default:
				v, err := strconv.ParseFloat(value, 64)
				if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
					return &contract.UsageError{Err: fmt.Errorf("budget %q: give the dollars %s may spend a month (0 or more, e.g. 500), none (no budget) or default (config.yaml's budgets.monthly)", args[1], name)}
				}
				monthly = &v
			}
			st, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			by := os.Getenv("USER")
			if clear {
				err = st.ClearBudget(cmd.Context(), name)
			} else {
				err = st.SetBudget(cmd.Context(), name, monthly, by)
			}
			if err != nil {
				return &contract.UsageError{Err: fmt.Errorf("%w (see `sortie server users list`)", err)}
			}
			cfg, err := config.Load(h, os.Getenv)
			if err != nil {
				return err
			}
			own, err := st.Budgets(cmd.Context())
			if err != nil {
				return err
			}
			now := time.Now()
			spent, err := st.Spent(cmd.Context(), name, store.MonthStart(now), now)
			if err != nil {
				return err
			}
			b, left := budgetColumns(own, cfg.Budgets.Monthly, name, spent[name])
			fmt.Fprintf(out, "%s's monthly budget: %s; spent %s this month (UTC), %s left\n", name, b, showDollars(spent[name]), left)
			return nil
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a user's token: it opens nothing from now on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := open(cmd.Context())
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.RevokeUser(cmd.Context(), args[0]); err != nil {
				return &contract.UsageError{Err: fmt.Errorf("%w (see `sortie server users list`)", err)}
			}
			fmt.Fprintf(out, "revoked %s\n", args[0])
			return nil
		},
	}
	users.AddCommand(add, list, revoke, budget)
	return users
}

// budgetColumns are a user's BUDGET and LEFT as `users list` shows them:
// "$500.00" (their own), "$100.00 (default)" (config.yaml's), "none";
// what is left of it after spent, "-" without a budget.
func budgetColumns(own map[string]store.Budget, def *float64, name string, spent store.Cost) (budget, left string) {
	limit, suffix := def, " (default)"
	if b, ok := own[name]; ok {
		limit, suffix = b.Monthly, ""
	}
	if limit == nil {
		return "none", "-"
	}
	rest := store.Cost{Dollars: max(*limit-spent.Dollars, 0), Estimate: spent.Estimate}
	return fmt.Sprintf("$%.2f", *limit) + suffix, showDollars(rest)
}

// showDollars writes an amount, "~" first when it is an estimate.
func showDollars(c store.Cost) string {
	s := fmt.Sprintf("$%.2f", c.Dollars)
	if c.Estimate {
		s = "~" + s
	}
	return s
}
