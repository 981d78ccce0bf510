package cli

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"sortie/controller/contract"
)

// quotaScopeFlags are the flags that name a quota's scope.
type quotaScopeFlags struct {
	server, perUser bool
	user, group     string
}

func (s *quotaScopeFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&s.server, "server", false, "the server's limit: everyone's jobs together")
	cmd.Flags().BoolVar(&s.perUser, "per-user", false, "the limit of each user who has none of their own")
	cmd.Flags().StringVar(&s.user, "user", "", "the limit of user `NAME`")
	cmd.Flags().StringVar(&s.group, "group", "", "the limit group `NAME`'s members share")
}

// request is the scope the flags name: exactly one of them.
func (s *quotaScopeFlags) request(cmd *cobra.Command) (contract.QuotaRequest, error) {
	var req contract.QuotaRequest
	var given []string
	if s.server {
		req.Scope, given = "server", append(given, "--server")
	}
	if s.perUser {
		req.Scope, given = "per_user", append(given, "--per-user")
	}
	if cmd.Flags().Changed("user") {
		req.Scope, req.Name, given = "user", s.user, append(given, "--user "+s.user)
	}
	if cmd.Flags().Changed("group") {
		req.Scope, req.Name, given = "group", s.group, append(given, "--group "+s.group)
	}
	switch len(given) {
	case 0:
		return req, usageErrorf("say whose limit: give one of --server, --per-user, --user NAME or --group NAME")
	case 1:
		return req, nil
	}
	return req, usageErrorf("%s: give only one of --server, --per-user, --user NAME or --group NAME", strings.Join(given, " and "))
}

// NewCmdQuotas builds `server quotas [set | unset]`: the limits in
// effect, and an admin's changes to them, through whatever service the
// CLI speaks to (SORTIE_API_URL, or the home's store on the server's
// machine).
func NewCmdQuotas(f *Factory) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "quotas [set | unset] [-o json]",
		Short: "List the limits in effect (the server's, the per-user default, each user's and group's) and where each comes from",
		Long: "List the limits running jobs are held to: config.yaml's limits: section, with each scope's entry replaced by\n" +
			"a quota an admin set through the server (`sortie server quotas set`). Any user may list them; only an admin\n" +
			"may set or unset one. A change takes effect at the next admission pass of every replica: running jobs go on,\n" +
			"new ones wait while the limit is reached.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				qs, err := svc.Quotas(cmd.Context())
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, orEmptyList(qs))
				}
				if len(qs) == 0 {
					fmt.Fprintln(f.Out, "No limits: every job starts when launched (set them in config.yaml's limits: or with `sortie server quotas set`).")
					return nil
				}
				t := newTable(f.Out, "SCOPE", "NAME", "RUNNING JOBS", "NODES", "VCPUS", "GPUS", "$/HOUR", "MEMBERS", "SOURCE")
				for _, q := range qs {
					t.row(q.Scope, dashIfEmpty(q.Name), countOrDash(q.Limit.RunningJobs), countOrDash(q.Limit.Nodes),
						countOrDash(q.Limit.VCPUs), gpusOrDash(q.Limit.GPUs), dollarsOrDash(q.Limit.HourlyCost),
						dashIfEmpty(strings.Join(q.Members, ",")), quotaSource(q))
				}
				return t.flush()
			})
		},
	}
	cmd.PersistentFlags().StringVarP(&output, "output", "o", "table", "output format: table or json")

	var scope quotaScopeFlags
	var jobs, nodes, vcpus int
	var hourlyCost float64
	var gpus []string
	var members string
	set := &cobra.Command{
		Use:   "set (--server | --per-user | --user NAME | --group NAME) [--running-jobs N] [--nodes N] [--vcpus N] [--gpu TYPE=N ...] [--hourly-cost DOLLARS] [--members a,b]",
		Short: "Set a scope's limit (an admin): it replaces config.yaml's entry of that scope whole; a count left out is no limit",
		Long: "Set what the running jobs of a scope may hold at once: the server's (--server), each user's unless they have\n" +
			"their own (--per-user), one user's (--user NAME) or a group's (--group NAME --members a,b; a group config.yaml\n" +
			"has keeps its members unless --members is given). The quota replaces config.yaml's entry of the scope whole:\n" +
			"a count left out is not limited. Given no count, the scope is not limited at all. `unset` gives config.yaml's back.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			req, err := scope.request(cmd)
			if err != nil {
				return err
			}
			for _, c := range []struct {
				flag string
				v    int
				to   **int
			}{{"running-jobs", jobs, &req.RunningJobs}, {"nodes", nodes, &req.Nodes}, {"vcpus", vcpus, &req.VCPUs}} {
				if cmd.Flags().Changed(c.flag) {
					v := c.v
					*c.to = &v
				}
			}
			if cmd.Flags().Changed("hourly-cost") {
				c := hourlyCost
				req.HourlyCost = &c
			}
			for _, g := range gpus {
				name, count, ok := strings.Cut(g, "=")
				n, err := strconv.Atoi(strings.TrimSpace(count))
				if !ok || err != nil || strings.TrimSpace(name) == "" {
					return usageErrorf("--gpu %s: write TYPE=COUNT, e.g. --gpu A100=16 (repeat --gpu for each type)", g)
				}
				if req.GPUs == nil {
					req.GPUs = map[string]int{}
				}
				name = strings.TrimSpace(name)
				if _, dup := req.GPUs[name]; dup {
					return usageErrorf("--gpu %s: %s is given twice; give each type once", g, name)
				}
				req.GPUs[name] = n
			}
			if cmd.Flags().Changed("members") {
				for _, m := range strings.Split(members, ",") {
					if m = strings.TrimSpace(m); m != "" {
						req.Members = append(req.Members, m)
					}
				}
				if len(req.Members) == 0 {
					return usageErrorf("--members %q: list the group's users separated by commas, e.g. --members alice,bob", members)
				}
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				v, err := svc.SetQuota(cmd.Context(), req)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, v)
				}
				replaces := ""
				if v.ReplacesConfig {
					replaces = " (replacing config.yaml's)"
				}
				fmt.Fprintf(f.Out, "Set the quota of %s%s: %s. It holds from the next admission pass; running jobs go on.\n",
					quotaScope(*v), replaces, describeLimit(v.Limit))
				return nil
			})
		},
	}
	scope.add(set)
	set.Flags().IntVar(&jobs, "running-jobs", 0, "how many jobs may run at once (0 allows none)")
	set.Flags().IntVar(&nodes, "nodes", 0, "how many nodes running jobs may hold")
	set.Flags().IntVar(&vcpus, "vcpus", 0, "how many vCPUs running jobs may hold")
	set.Flags().StringArrayVar(&gpus, "gpu", nil, "how many GPUs of a type running jobs may hold, `TYPE=N` (A100=16); repeat for each type")
	set.Flags().Float64Var(&hourlyCost, "hourly-cost", 0, "how many `DOLLARS` an hour running jobs may cost together (kept in whole cents)")
	set.Flags().StringVar(&members, "members", "", "a group's users, `a,b`")

	var unsetScope quotaScopeFlags
	unset := &cobra.Command{
		Use:   "unset (--server | --per-user | --user NAME | --group NAME)",
		Short: "Remove a scope's quota (an admin): config.yaml's entry of that scope holds again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outputFlag(output); err != nil {
				return err
			}
			req, err := unsetScope.request(cmd)
			if err != nil {
				return err
			}
			return withService(cmd.Context(), f, func(svc Service) error {
				v, err := svc.UnsetQuota(cmd.Context(), req)
				if err != nil {
					return err
				}
				if output == "json" {
					return printJSON(f.Out, v)
				}
				if v.Source == contract.QuotaFromNone {
					fmt.Fprintf(f.Out, "Removed the quota of %s: config.yaml has no limit for it, so it is not limited.\n", quotaScope(*v))
					return nil
				}
				fmt.Fprintf(f.Out, "Removed the quota of %s: config.yaml's holds again: %s.\n", quotaScope(*v), describeLimit(v.Limit))
				return nil
			})
		},
	}
	unsetScope.add(unset)
	cmd.AddCommand(set, unset)
	return cmd
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func countOrDash(n *int) string {
	if n == nil {
		return "-"
	}
	return strconv.Itoa(*n)
}

// gpusOrDash is "A100 16, H100 2", or "-".
func gpusOrDash(g map[string]int) string {
	if len(g) == 0 {
		return "-"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(g)) {
		parts = append(parts, name+" "+strconv.Itoa(g[name]))
	}
	return strings.Join(parts, ", ")
}

// quotaSource is "config.yaml", or "set by root 2026-12-07 19:00 UTC".
func quotaSource(q contract.QuotaView) string {
	switch q.Source {
	case contract.QuotaFromConfig:
		return "config.yaml"
	case contract.QuotaFromServer:
		s := "set by " + dashIfEmpty(q.SetBy)
		if q.SetAt != nil {
			s += " " + q.SetAt.UTC().Format("2006-01-02 15:04 MST")
		}
		if q.ReplacesConfig {
			s += " (replaces config.yaml's)"
		}
		return s
	}
	return q.Source
}

// quotaScope is "the server", "the per-user default", "user alice",
// "group ml (alice, bob)".
func quotaScope(q contract.QuotaView) string {
	switch q.Scope {
	case "server":
		return "the server"
	case "per_user":
		return "the per-user default"
	case "group":
		return "group " + q.Name + " (" + strings.Join(q.Members, ", ") + ")"
	}
	return q.Scope + " " + q.Name
}

// describeLimit is "10 running jobs, 16 A100", or "nothing limited".
func describeLimit(l contract.UsageAmounts) string {
	var parts []string
	for _, c := range []struct {
		n    *int
		unit string
	}{{l.RunningJobs, "running jobs"}, {l.Nodes, "nodes"}, {l.VCPUs, "vCPUs"}} {
		if c.n != nil {
			parts = append(parts, strconv.Itoa(*c.n)+" "+c.unit)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(l.GPUs)) {
		parts = append(parts, strconv.Itoa(l.GPUs[name])+" "+name)
	}
	if l.HourlyCost != nil {
		parts = append(parts, fmt.Sprintf("$%.2f an hour", *l.HourlyCost))
	}
	if len(parts) == 0 {
		return "nothing limited"
	}
	return "at most " + strings.Join(parts, ", ")
}

// dollarsOrDash is "$40.00", or "-".
func dollarsOrDash(d *float64) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("$%.2f", *d)
}
