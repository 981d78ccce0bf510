package bucket

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Region says where each bucket lives, asked from a client of another
// region, and that a missing bucket is missing.
func TestS3RegionOnMoto(t *testing.T) {
	ctx := context.Background()
	s := newMotoS3(t) // a us-east-1 client
	if err := s.Create(ctx, "here"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: strPtr("far"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintEuWest1}},
		func(o *s3.Options) { o.Region = "eu-west-1" }); err != nil {
		t.Fatal(err)
	}
	for bucket, want := range map[string]string{"here": "us-east-1", "far": "eu-west-1"} {
		if r, ok, err := s.Region(ctx, bucket); err != nil || !ok || r != want {
			t.Errorf("Region(%s) = %q, %v, %v; want %s", bucket, r, ok, err, want)
		}
	}
	if r, ok, err := s.Region(ctx, "nowhere"); err != nil || ok {
		t.Errorf("Region of a missing bucket = %q, %v, %v; want not found", r, ok, err)
	}
}

func strPtr(s string) *string { return &s }
