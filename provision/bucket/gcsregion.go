package bucket

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"cloud.google.com/go/storage"
)

// Region is where a Cloud Storage bucket lives, lower-cased as a GCP
// region is written ("us-central1"), or a multi-region's name ("us", "eu",
// "asia"). ok is false, with no error, when the bucket does not exist.
func (g *GCS) Region(ctx context.Context, bucket string) (region string, ok bool, err error) {
	attrs, err := g.Client.Bucket(bucket).Attrs(ctx)
	switch {
	case err == nil:
		return strings.ToLower(attrs.Location), true, nil
	case errors.Is(err, storage.ErrBucketNotExist) || gcsStatus(err) == http.StatusNotFound:
		return "", false, nil
	}
	return "", false, gcsError("read the location of gs://"+bucket, err)
}

// CreateIn makes a bucket in a GCP region (the cluster's), where Create
// leaves it to Cloud Storage's default, the multi-region US.
func (g *GCS) CreateIn(ctx context.Context, bucket, region string) error {
	return g.create(ctx, bucket, &storage.BucketAttrs{Location: region})
}
