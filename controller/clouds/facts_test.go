package clouds

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An EC2 node's sync program gets the store's endpoint, its region and
// the metadata service to take the instance role from; the controller's
// own keys never leave its machine.
func TestAWSStorageEnv(t *testing.T) {
	controllerEnv := map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "tok", "AWS_PROFILE": "me",
		"AWS_ENDPOINT_URL_S3": "http://minio:9000", "AWS_ENDPOINT_URL": "http://all:4566", "HOME": "/home/me",
	}
	got := awsStorageEnv(func(k string) string { return controllerEnv[k] }, "us-west-2", "http://127.0.0.1:1338")
	want := map[string]string{
		"AWS_REGION": "us-west-2", "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:1338",
		"AWS_ENDPOINT_URL_S3": "http://minio:9000", "AWS_ENDPOINT_URL": "http://all:4566",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	// On EC2 itself: the default metadata service, AWS's S3.
	got = awsStorageEnv(func(string) string { return "" }, "eu-west-1", "")
	if diff := cmp.Diff(map[string]string{"AWS_REGION": "eu-west-1"}, got); diff != "" {
		t.Errorf("env with nothing set (-want +got):\n%s", diff)
	}
}

func TestGCSNear(t *testing.T) {
	for _, c := range []struct {
		location, region string
		near             bool
	}{
		{"us-central1", "us-central1", true},
		{"europe-west4", "us-central1", false},
		{"us", "us-east1", true},
		{"us", "europe-west4", false},
		{"eu", "europe-west1", true},
		{"asia", "asia-east1", true},
		{"asia", "us-west1", false},
		{"nam4", "europe-west4", true}, // a dual-region: not sure, no warning
		{"northamerica-northeast1", "us-east1", false},
	} {
		if got := gcsNear(c.location, c.region); got != c.near {
			t.Errorf("gcsNear(%q, %q) = %v, want %v", c.location, c.region, got, c.near)
		}
	}
}
