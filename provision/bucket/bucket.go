// Package bucket syncs a directory on a node with a bucket prefix: the
// download before setup, the uploads of what changed, and a local
// source's content-addressed upload at launch. Each store (S3, GCS) is
// behind the narrow Store interface; cmd/sortie-sync is the program the
// node agent and the controller run to use it, so that neither of them
// links a cloud SDK.
//
// It must not import sortie/controller/... or sortie/schema: bucket syncing
// runs on nodes, in sortie-sync.
package bucket

import (
	"context"
	"errors"
	"io"
	"time"
)

// Object is one object of a listing.
type Object struct {
	Key      string
	Size     int64
	ETag     string
	Modified time.Time
}

// Store is what syncing needs of an object store.
type Store interface {
	// List returns every object whose key starts with prefix.
	List(ctx context.Context, bucket, prefix string) ([]Object, error)
	// Get writes the object's bytes to w.
	Get(ctx context.Context, bucket, key string, w io.WriterAt) error
	// Put uploads size bytes from r as key and returns the new ETag.
	Put(ctx context.Context, bucket, key string, r io.Reader, size int64) (string, error)
	// Exists says whether the bucket is there: false with no error when it
	// is not, ErrDenied when it is but these credentials cannot read it.
	Exists(ctx context.Context, bucket string) (bool, error)
	// Create makes the bucket.
	Create(ctx context.Context, bucket string) error
	// Delete removes every object of the bucket, and the bucket.
	Delete(ctx context.Context, bucket string) error
}

// ErrDenied says the credentials may not read a bucket (another
// account's, or a policy that refuses them).
var ErrDenied = errors.New("access denied")

// MarkerPrefix holds sortie's own objects under a mount's prefix (the
// markers of uploaded sources); downloads skip it.
const MarkerPrefix = ".sortie/"
