package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"sortie/controller/contract"
)

// quotasFake answers `server quotas` as a service would, remembering the
// request it was given.
type quotasFake struct {
	Service
	list  []contract.QuotaView
	set   *contract.QuotaRequest
	unset *contract.QuotaRequest
	err   error
}

func (s *quotasFake) Quotas(context.Context) ([]contract.QuotaView, error) { return s.list, s.err }
func (s *quotasFake) SetQuota(_ context.Context, req contract.QuotaRequest) (*contract.QuotaView, error) {
	s.set = &req
	if s.err != nil {
		return nil, s.err
	}
	return &contract.QuotaView{Scope: req.Scope, Name: req.Name, Members: req.Members, Source: "quota", ReplacesConfig: true,
		Limit: contract.UsageAmounts{RunningJobs: req.RunningJobs, Nodes: req.Nodes, VCPUs: req.VCPUs, GPUs: req.GPUs, HourlyCost: req.HourlyCost}}, nil
}
func (s *quotasFake) UnsetQuota(_ context.Context, req contract.QuotaRequest) (*contract.QuotaView, error) {
	s.unset = &req
	return &contract.QuotaView{Scope: req.Scope, Name: req.Name, Source: "none"}, s.err
}
func (s *quotasFake) Close() error { return nil }

// `server quotas set` reads the scope and the counts into one request;
// bad flags are usage errors that name the flag, the value and the fix,
// and ask nothing; the list shows each limit and its source.
func TestServerQuotas(t *testing.T) {
	run := func(fake *quotasFake, argv ...string) (int, string, string) {
		f, out, errb := testFactory()
		f.Service = func(context.Context) (Service, error) { return fake, nil }
		return Execute(f, append([]string{"server", "quotas"}, argv...)), out.String(), errb.String()
	}
	fake := &quotasFake{}
	code, out, errs := run(fake, "set", "--user", "alice", "--running-jobs", "10", "--gpu", "A100=16", "--gpu", "H100=0", "--hourly-cost", "12.5")
	ten, dollars := 10, 12.5
	want := contract.QuotaRequest{Scope: "user", Name: "alice", RunningJobs: &ten, GPUs: map[string]int{"A100": 16, "H100": 0}, HourlyCost: &dollars}
	if code != 0 || fake.set == nil || !cmp.Equal(*fake.set, want) {
		t.Fatalf("set: exit %d (%s), asked %+v, want %+v", code, errs, fake.set, want)
	}
	if wantOut := "Set the quota of user alice (replacing config.yaml's): at most 10 running jobs, 16 A100, 0 H100, $12.50 an hour. It holds from the next admission pass; running jobs go on.\n"; out != wantOut {
		t.Errorf("set printed %q, want %q", out, wantOut)
	}
	fake = &quotasFake{}
	if code, _, errs := run(fake, "set", "--group", "ml", "--members", "alice, bob", "--vcpus", "0"); code != 0 || fake.set.Scope != "group" ||
		strings.Join(fake.set.Members, ",") != "alice,bob" || *fake.set.VCPUs != 0 {
		t.Errorf("group set: exit %d (%s), asked %+v", code, errs, fake.set)
	}
	fake = &quotasFake{}
	if code, _, _ := run(fake, "unset", "--per-user"); code != 0 || fake.unset == nil || fake.unset.Scope != "per_user" {
		t.Errorf("unset: exit %d, asked %+v", code, fake.unset)
	}

	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"set", "--running-jobs", "3"}, "say whose limit: give one of --server, --per-user, --user NAME or --group NAME"},
		{[]string{"set", "--server", "--user", "bob"}, "--server and --user bob: give only one of"},
		{[]string{"set", "--server", "--gpu", "A100:16"}, "--gpu A100:16: write TYPE=COUNT, e.g. --gpu A100=16"},
		{[]string{"set", "--server", "--gpu", "A100=8", "--gpu", "A100=9"}, "A100 is given twice"},
		{[]string{"set", "--server", "--nodes", "many"}, `invalid argument "many" for "--nodes"`},
		{[]string{"set", "--server", "--hourly-cost", "$40"}, `invalid argument "$40" for "--hourly-cost"`},
		{[]string{"set", "--group", "ml", "--members", ","}, `--members ",": list the group's users`},
		{[]string{"unset"}, "say whose limit"},
		{[]string{"unset", "--server", "--nodes", "3"}, "unknown flag: --nodes"},
		{[]string{"-o", "yaml"}, `-o: "yaml" is not an output format`},
	} {
		fake := &quotasFake{}
		code, _, errs := run(fake, tc.argv...)
		if code != ExitUsage || fake.set != nil || fake.unset != nil || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q, asked %+v %+v; want exit %d saying %q, nothing asked", tc.argv, code, errs, fake.set, fake.unset, ExitUsage, tc.want)
		}
	}
	// The service's refusals pass on with their exit status.
	if code, _, errs := run(&quotasFake{err: &contract.AdminError{Verb: "set a quota"}}, "set", "--server", "--nodes", "1"); code == 0 ||
		!strings.Contains(errs, "only an admin may set a quota") {
		t.Errorf("refused: exit %d %q", code, errs)
	}

	twenty, forty, at := 20, 40.5, time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC)
	list := []contract.QuotaView{
		{Scope: "server", Limit: contract.UsageAmounts{RunningJobs: &twenty, GPUs: map[string]int{"A100": 64}, HourlyCost: &forty}, Source: "config"},
		{Scope: "user", Name: "alice", Limit: contract.UsageAmounts{GPUs: map[string]int{"A100": 32}}, Source: "quota", SetBy: "root", SetAt: &at, ReplacesConfig: true},
		{Scope: "group", Name: "ml", Members: []string{"alice", "bob"}, Limit: contract.UsageAmounts{GPUs: map[string]int{}}, Source: "quota", SetBy: "root", SetAt: &at},
	}
	_, out, _ = run(&quotasFake{list: list})
	wantTable := "SCOPE   NAME   RUNNING JOBS  NODES  VCPUS  GPUS     $/HOUR  MEMBERS    SOURCE\n" +
		"server  -      20            -      -      A100 64  $40.50  -          config.yaml\n" +
		"user    alice  -             -      -      A100 32  -       -          set by root 2026-12-07 19:00 UTC (replaces config.yaml's)\n" +
		"group   ml     -             -      -      -        -       alice,bob  set by root 2026-12-07 19:00 UTC\n"
	if out != wantTable {
		t.Errorf("list:\n%s\nwant\n%s", out, wantTable)
	}
	if _, out, _ = run(&quotasFake{}, "-o", "json"); out != "[]\n" {
		t.Errorf("-o json of none: %q", out)
	}
	if _, out, _ = run(&quotasFake{}); !strings.Contains(out, "No limits: every job starts when launched") {
		t.Errorf("none: %q", out)
	}
}

type usageFake struct {
	Service
	rows []contract.UsageView
}

func (s *usageFake) Usage(context.Context) ([]contract.UsageView, error) { return s.rows, nil }
func (s *usageFake) Close() error                                        { return nil }

// `server usage` through a server prints the server's line from the
// total every row carries, also when the user is given their own row
// alone.
func TestUsageThroughTheService(t *testing.T) {
	one, three, eight, twenty := 1, 3, 8, 20
	cost, all, limit := 2.5, 7.25, 40.0
	row := contract.UsageView{User: "bob", Held: contract.UsageAmounts{RunningJobs: &one, Nodes: &one, VCPUs: &eight, GPUs: map[string]int{}, HourlyCost: &cost},
		ServerLimit: &contract.UsageAmounts{RunningJobs: &twenty, HourlyCost: &limit}, Weight: 1, DecayedUse: 2.5, Share: 0.25, Waiting: 4,
		ServerHeld: contract.UsageAmounts{RunningJobs: &three, Nodes: &three, VCPUs: &twenty, GPUs: map[string]int{}, HourlyCost: &all}, HalfLifeHours: 24}
	f, out, _ := testFactory()
	f.Service = func(context.Context) (Service, error) { return &usageFake{rows: []contract.UsageView{row}}, nil }
	cmd := NewCmdUsage(f)
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := "Server: 3/20 running jobs, 3 nodes, 20 vCPUs, GPUs -, $7.25/$40.00 an hour (held/limit); use decays with a half-life of 24h0m0s\n" +
		"USER  JOBS  NODES  VCPUS  GPUS  $/HOUR  WEIGHT  USE (h)  SHARE  WAITING\n" +
		"bob   1     1      8      -     $2.50   1       2.5      25.0%  4\n"
	if out.String() != want {
		t.Errorf("usage:\n%s\nwant\n%s", out, want)
	}
}
