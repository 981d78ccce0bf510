package bucket

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
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

// farS3 is an S3 whose one bucket, far, lives in eu-west-1: a request
// signed for another region is redirected, as S3 does, with the bucket's
// region in x-amz-bucket-region.
func farS3(t *testing.T) (*S3, *int) {
	t.Helper()
	redirects := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amz-Bucket-Region", "eu-west-1")
		if !strings.Contains(r.Header.Get("Authorization"), "/eu-west-1/s3/aws4_request") {
			redirects++
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusMovedPermanently)
			if r.Method != http.MethodHead {
				w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message></Error>`))
			}
			return
		}
		switch {
		case r.Method == http.MethodHead && r.URL.Path == "/far":
		case r.Method == http.MethodGet && r.URL.Path == "/far" && r.URL.Query().Get("list-type") == "2":
			w.Header().Set("Content-Type", "application/xml")
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>far</Name><KeyCount>1</KeyCount><IsTruncated>false</IsTruncated>` +
				`<Contents><Key>step-1</Key><Size>1</Size><ETag>"e1"</ETag><LastModified>2026-11-30T12:00:00.000Z</LastModified></Contents></ListBucketResult>`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})
	return NewS3Client(c), &redirects
}

// A bucket in another region than the client's is reached there: found,
// listed, its region asked once.
func TestS3ReachesABucketInItsRegion(t *testing.T) {
	ctx := context.Background()
	s, redirects := farS3(t)
	if ok, err := s.Exists(ctx, "far"); err != nil || !ok {
		t.Fatalf("Exists(far) = %v, %v; want true", ok, err)
	}
	objs, err := s.List(ctx, "far", "")
	if err != nil || len(objs) != 1 || objs[0].Key != "step-1" {
		t.Fatalf("List(far) = %+v, %v; want step-1", objs, err)
	}
	if *redirects != 1 {
		t.Errorf("%d requests went to the wrong region, want 1 (the region's lookup)", *redirects)
	}
}

// CreateIn makes the bucket in the region asked, whatever the client's.
func TestS3CreateInARegion(t *testing.T) {
	ctx := context.Background()
	s := newMotoS3(t) // a us-east-1 client
	if err := s.CreateIn(ctx, "near-cluster", "ap-southeast-2"); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIn(ctx, "near-cluster", "ap-southeast-2"); err != nil {
		t.Fatalf("a second CreateIn of one's own bucket: %v", err)
	}
	if r, ok, err := s.Region(ctx, "near-cluster"); err != nil || !ok || r != "ap-southeast-2" {
		t.Errorf("Region = %q, %v, %v; want ap-southeast-2", r, ok, err)
	}
}
