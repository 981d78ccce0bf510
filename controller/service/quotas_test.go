package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/controller/store"
)

// `server quotas`: config.yaml's limits are listed with their source; an
// admin's quota replaces its scope's entry and says who set it; unset
// gives config.yaml's back; a user who is no admin may list but not set.
func TestQuotas(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	twenty, five := 20, 5
	s.Config.Limits = config.LimitsConfig{
		Server:  config.Limit{RunningJobs: &twenty},
		PerUser: &config.Limit{RunningJobs: &five},
		Groups:  map[string]config.GroupLimit{"ml": {Members: []string{"alice", "bob"}, GPUs: map[string]int{"A100": 8}}},
	}
	admin := s.As(&contract.Asker{Name: "root", Admin: true})
	alice := s.As(&contract.Asker{Name: "alice"})
	list := func() string {
		t.Helper()
		vs, err := alice.Quotas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range vs {
			line := v.Scope + " " + v.Name + " " + v.Source + " " + v.SetBy
			if v.Limit.RunningJobs != nil {
				line += " jobs=" + strconv.Itoa(*v.Limit.RunningJobs)
			}
			for g, n := range v.Limit.GPUs {
				line += " " + g + "=" + strconv.Itoa(n)
			}
			if v.Members != nil {
				line += " [" + strings.Join(v.Members, ",") + "]"
			}
			if v.ReplacesConfig {
				line += " replaces"
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	if got, want := list(), "server  config  jobs=20\nper_user  config  jobs=5\ngroup ml config  A100=8 [alice,bob]"; got != want {
		t.Errorf("config's limits:\n%s\nwant\n%s", got, want)
	}

	// Only an admin sets or unsets.
	ten := 10
	_, err := alice.SetQuota(ctx, contract.QuotaRequest{Scope: "server", RunningJobs: &ten})
	var ae *contract.AdminError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "only an admin may set a quota") {
		t.Errorf("alice sets a quota: %v, want an admin error", err)
	}
	if _, err := alice.UnsetQuota(ctx, contract.QuotaRequest{Scope: "server"}); !errors.As(err, &ae) {
		t.Errorf("alice unsets a quota: %v, want an admin error", err)
	}

	v, err := admin.SetQuota(ctx, contract.QuotaRequest{Scope: "server", RunningJobs: &ten})
	if err != nil || v.Source != "quota" || v.SetBy != "root" || v.SetAt == nil || !v.ReplacesConfig || *v.Limit.RunningJobs != 10 {
		t.Fatalf("set the server's: %+v %v", v, err)
	}
	// A group config.yaml has keeps its members; a user gets their own.
	if _, err := admin.SetQuota(ctx, contract.QuotaRequest{Scope: "group", Name: "ml", GPUs: map[string]int{"A100": 16}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetQuota(ctx, contract.QuotaRequest{Scope: "user", Name: "carol", GPUs: map[string]int{"H100": 2}}); err != nil {
		t.Fatal(err)
	}
	want := "server  quota root jobs=10 replaces\nper_user  config  jobs=5\nuser carol quota root H100=2\ngroup ml quota root A100=16 [alice,bob] replaces"
	if got := list(); got != want {
		t.Errorf("with quotas:\n%s\nwant\n%s", got, want)
	}
	// The launch check counts them: carol may never have 4 H100.
	task := filepath.Join(t.TempDir(), "t.yaml")
	os.WriteFile(task, []byte("resources: {accelerators: H100:4}\nrun: x\n"), 0o644)
	_, err = s.As(&contract.Asker{Name: "carol"}).Launch(ctx, contract.LaunchRequest{File: task})
	var ue *contract.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "asks for 4 H100, more than the user limit of carol of 2 (limits in config.yaml and `sortie server quotas`)") {
		t.Errorf("carol launches 4 H100: %v", err)
	}

	// Unset: config.yaml's entry again, or none.
	v, err = admin.UnsetQuota(ctx, contract.QuotaRequest{Scope: "server"})
	if err != nil || v.Source != "config" || *v.Limit.RunningJobs != 20 {
		t.Errorf("unset the server's: %+v %v, want config.yaml's 20", v, err)
	}
	v, err = admin.UnsetQuota(ctx, contract.QuotaRequest{Scope: "user", Name: "carol"})
	if err != nil || v.Source != "none" || v.Limit.RunningJobs != nil {
		t.Errorf("unset carol's: %+v %v, want none", v, err)
	}
	if _, err := admin.UnsetQuota(ctx, contract.QuotaRequest{Scope: "user", Name: "carol"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unset carol's again: %v, want not found", err)
	}
	acts, _ := s.Store.Actions(ctx, 0)
	if n := len(acts); n != 5 || acts[0].Verb != "quota" || acts[0].Actor != "root" {
		t.Errorf("actions %+v, want 5 quota actions by root", acts)
	}
}

// Bad values are usage errors naming the flag, the value and the fix.
func TestQuotaRefusesBadValues(t *testing.T) {
	ctx := context.Background()
	s := testService(t)
	s.Config.Limits.Server.GPUs = map[string]int{"A100": 64}
	neg := -1
	for _, tc := range []struct {
		req  contract.QuotaRequest
		want string
	}{
		{contract.QuotaRequest{Scope: "server", RunningJobs: &neg}, "--running-jobs -1: give how many jobs may run at once, 0 or more (0 allows none)"},
		{contract.QuotaRequest{Scope: "server", VCPUs: &neg}, "--vcpus -1: give how many vCPUs running jobs may hold at once"},
		{contract.QuotaRequest{Scope: "user", Name: "alice", GPUs: map[string]int{"A100": -2}}, "--gpu A100=-2: give how many A100 GPUs"},
		{contract.QuotaRequest{Scope: "user", Name: "alice", GPUs: map[string]int{"a100": 8}}, "--gpu a100=8: tasks and limits here call this GPU A100, and limits count GPUs by that name; write --gpu A100=8"},
		{contract.QuotaRequest{Scope: "user", Name: "alice", GPUs: map[string]int{"A100:8": 1}}, `--gpu A100:8=1: "A100:8" is not a GPU type`},
		{contract.QuotaRequest{Scope: "user", Name: ""}, `--user "": give a user name`},
		{contract.QuotaRequest{Scope: "server", Name: "x"}, "scope server takes no name"},
		{contract.QuotaRequest{Scope: "team"}, `scope "team": give one of --server, --per-user, --user NAME or --group NAME`},
		{contract.QuotaRequest{Scope: "group", Name: "new"}, "--group new: config.yaml has no such group, so name its members: --members alice,bob"},
		{contract.QuotaRequest{Scope: "user", Name: "bob", Members: []string{"x"}}, "--members x: only a group has members"},
		{contract.QuotaRequest{Scope: "group", Name: "g", Members: []string{"a b"}}, `--members: "a b" is not a user name`},
	} {
		_, err := s.SetQuota(ctx, tc.req)
		var ue *contract.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error saying %q", tc.req, err, tc.want)
		}
	}
	if _, err := s.UnsetQuota(ctx, contract.QuotaRequest{Scope: "server", RunningJobs: &neg}); err == nil || !strings.Contains(err.Error(), "unset takes only the scope") {
		t.Errorf("unset with a count: %v", err)
	}
	if qs, _ := s.Store.Quotas(ctx); len(qs) != 0 {
		t.Errorf("%d quotas stored, want none", len(qs))
	}
}
