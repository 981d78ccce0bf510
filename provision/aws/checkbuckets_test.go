package aws

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// `sortie check`'s bucket lines: S3 listing, and the instance profile of
// tasks with buckets, missing, made, refused or misnamed, each saying the
// permission in question.
func TestCheckBucketsAndProfile(t *testing.T) {
	e := newEnv(t)
	ctx := testContext(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", e.moto.URL)
	check := func(change ...func(*Config)) CheckResult {
		t.Helper()
		cfg := e.config()
		for _, c := range change {
			c(&cfg)
		}
		res, err := Check(ctx, cfg)
		if err != nil || !res.OK() {
			t.Fatalf("Check: %+v, %v", res, err)
		}
		return res
	}
	contains := func(what, got string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %q lacks %q", what, got, w)
			}
		}
	}

	res := check()
	contains("buckets", res.Buckets, "the credentials list S3 buckets (0)")
	contains("instance profile", res.InstanceProfile, "sortie-node does not exist yet", "iam:CreateRole", "iam:PassRole")

	e.proxy.FailNext("GetInstanceProfile", "AccessDenied", "not authorized to perform: iam:GetInstanceProfile")
	contains("instance profile", check().InstanceProfile, "refused iam:GetInstanceProfile", "AccessDenied", "iam:CreateRole", "aws.instance_profile")

	contains("instance profile", check(func(c *Config) { c.InstanceProfile = "arn:aws:iam::123456789012:instance-profile/team/theirs" }).InstanceProfile,
		"aws.instance_profile arn:aws:iam::123456789012:instance-profile/team/theirs does not exist", "FAILED_PRECHECKS")

	if err := e.provider(t).ensureNodeProfile(ctx); err != nil {
		t.Fatal(err)
	}
	contains("instance profile", check().InstanceProfile, "sortie-node (role sortie-node) exists", "iam:PassRole")

	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
	}))
	defer denied.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", denied.URL)
	contains("buckets", check().Buckets, "s3:ListAllMyBuckets", "AccessDenied")
}
