package gcp

import (
	"context"
	"strings"
	"testing"

	"sortie/provision"
	"sortie/provision/gcp/gcpfake"
)

// A task with buckets runs on VMs with a service account and the Cloud
// Storage read-write scope, which the insert carries: the project's default
// account unless gcp.service_account names one. A task without buckets
// gets none.
func TestLaunchServiceAccountForBuckets(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	for _, tc := range []struct {
		name, account, want string
		buckets             bool
	}{
		{"default", "", "default", true},
		{"named", "ckpts@my-proj.iam.gserviceaccount.com", "ckpts@my-proj.iam.gserviceaccount.com", true},
		{"no buckets", "ckpts@my-proj.iam.gserviceaccount.com", "", false},
	} {
		p := e.provider(t, func(c *Config) { c.ServiceAccount = tc.account })
		s := spec(int64(910+len(tc.name)), 1, "us-east1-c", spot())
		s.Buckets = tc.buckets
		launch(t, p, s)
		in := e.fake.Instance("us-east1-c", instanceName(s.Name, 0))
		sas := in.GetServiceAccounts()
		if tc.want == "" {
			if len(sas) != 0 {
				t.Errorf("%s: service accounts %v; want none", tc.name, sas)
			}
			continue
		}
		if len(sas) != 1 || sas[0].GetEmail() != tc.want || len(sas[0].GetScopes()) != 1 || sas[0].GetScopes()[0] != StorageScope {
			t.Errorf("%s: service accounts %v; want %s with %s", tc.name, sas, tc.want, StorageScope)
		}
	}
}

// A gcp.service_account that is not an email is refused before anything
// is made, naming the key and the value.
func TestServiceAccountRefused(t *testing.T) {
	e := newEnv(t, false, gcpfake.Options{})
	cfg := e.config()
	cfg.ServiceAccount = "ckpts"
	_, err := New(context.Background(), cfg)
	if provision.Classify(err) != provision.ClassPrechecks || !strings.Contains(err.Error(), `gcp.service_account: "ckpts" is not a service account`) {
		t.Fatalf("New with service_account ckpts: %v", err)
	}
}
