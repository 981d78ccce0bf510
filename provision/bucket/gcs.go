package bucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/compute/metadata"
	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

// GCS is a Store on Google Cloud Storage, or anything that speaks its JSON
// API (STORAGE_EMULATOR_HOST).
type GCS struct {
	Client *storage.Client
	// ChunkSize is how much of a file one request of a resumable upload
	// carries (a file no larger goes in a single request); 0 is the
	// library's 16 MiB.
	ChunkSize int
	// Project is where Create makes buckets; "" finds it (ProjectID).
	Project string
	// ResourceManager is the Resource Manager API's base URL Access asks
	// about permissions; "" is Google's (none against an emulator).
	ResourceManager string
	// HTTPClient asks the Resource Manager; nil is one with application
	// default credentials.
	HTTPClient *http.Client

	once       sync.Once
	project    string
	projectErr error
}

// NewGCS opens Cloud Storage with application default credentials, or,
// when STORAGE_EMULATOR_HOST is set, the emulator there without any.
//
// A request that fails for a reason worth retrying (a 429 or 5xx, a
// connection refused) is tried gcsAttempts times in all: the library's
// own default retries until the context ends, which would hang a sync
// whose endpoint is gone.
func NewGCS(ctx context.Context) (*GCS, error) {
	return newGCS(ctx, gcsBackoff)
}

const gcsAttempts = 5

// gcsBackoff is the library's default pause between tries.
var gcsBackoff = gax.Backoff{Initial: time.Second, Max: 30 * time.Second, Multiplier: 2}

func newGCS(ctx context.Context, backoff gax.Backoff) (*GCS, error) {
	c, err := storage.NewClient(ctx, storage.WithDisabledClientMetrics())
	if err != nil {
		return nil, fmt.Errorf("open Cloud Storage: %w", err)
	}
	c.SetRetry(storage.WithMaxAttempts(gcsAttempts), storage.WithBackoff(backoff))
	return &GCS{Client: c}, nil
}

// ProjectFromEnv is the project named by the environment, as gcloud and
// Google's libraries read it: GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT,
// GCLOUD_PROJECT; "" when none is set.
func ProjectFromEnv() string {
	for _, k := range []string{"GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// ProjectID is the project new buckets are made in: Project, else the
// environment's, else the application default credentials' (a service
// account key names its project), else, on a Compute Engine VM, the VM's.
func (g *GCS) ProjectID(ctx context.Context) (string, error) {
	if g.Project != "" {
		return g.Project, nil
	}
	g.once.Do(func() {
		if g.project = ProjectFromEnv(); g.project != "" {
			return
		}
		if os.Getenv("STORAGE_EMULATOR_HOST") == "" {
			if creds, err := google.FindDefaultCredentials(ctx); err == nil && creds.ProjectID != "" {
				g.project = creds.ProjectID
				return
			}
			if metadata.OnGCE() {
				if p, err := metadata.ProjectIDWithContext(ctx); err == nil && p != "" {
					g.project = p
					return
				}
			}
		}
		g.projectErr = errors.New("no Google Cloud project to make the bucket in: set GOOGLE_CLOUD_PROJECT")
	})
	return g.project, g.projectErr
}

// etagOf is what change detection compares: the object's MD5 in hex (as
// S3's ETag of a single-part object), else, for a composite object, which
// has none, its generation.
func etagOf(a *storage.ObjectAttrs) string {
	if len(a.MD5) > 0 {
		return hex.EncodeToString(a.MD5)
	}
	return "g" + strconv.FormatInt(a.Generation, 10)
}

func (g *GCS) List(ctx context.Context, bucket, prefix string) ([]Object, error) {
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "MD5", "Generation", "Updated"}); err != nil {
		return nil, err
	}
	var out []Object
	it := g.Client.Bucket(bucket).Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, gcsError("list gs://"+bucket+"/"+prefix, err)
		}
		out = append(out, Object{Key: a.Name, Size: a.Size, ETag: etagOf(a), Modified: a.Updated})
	}
}

func (g *GCS) Get(ctx context.Context, bucket, key string, w io.WriterAt) error {
	r, err := g.Client.Bucket(bucket).Object(key).NewReader(ctx)
	if err != nil {
		return gcsError("download gs://"+bucket+"/"+key, err)
	}
	defer r.Close()
	if _, err := io.Copy(io.NewOffsetWriter(w, 0), r); err != nil {
		return gcsError("download gs://"+bucket+"/"+key, err)
	}
	return nil
}

func (g *GCS) Put(ctx context.Context, bucket, key string, r io.Reader, size int64) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := g.Client.Bucket(bucket).Object(key).NewWriter(ctx)
	w.ContentType = "application/octet-stream"
	if g.ChunkSize > 0 {
		w.ChunkSize = g.ChunkSize
	}
	if size >= 0 && int64(w.ChunkSize) > size {
		// One request. The file is read whole first: the library ends a
		// single request's body cleanly when its reader fails, which would
		// make an object of the bytes read so far. Its MD5 goes with it,
		// for the service to check.
		data, err := io.ReadAll(r)
		if err != nil {
			return "", gcsError("upload gs://"+bucket+"/"+key, err)
		}
		sum := md5.Sum(data)
		w.ChunkSize, w.MD5 = 0, sum[:]
		r = bytes.NewReader(data)
	}
	if _, err := io.Copy(w, r); err != nil {
		cancel() // abandons the resumable upload: its last request is never sent
		return "", gcsError("upload gs://"+bucket+"/"+key, err)
	}
	if err := w.Close(); err != nil {
		return "", gcsError("upload gs://"+bucket+"/"+key, err)
	}
	return etagOf(w.Attrs()), nil
}

func (g *GCS) Exists(ctx context.Context, bucket string) (bool, error) {
	_, err := g.Client.Bucket(bucket).Attrs(ctx)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrBucketNotExist) || gcsStatus(err) == http.StatusNotFound:
		return false, nil
	}
	return false, gcsError("read gs://"+bucket, err)
}

func (g *GCS) Create(ctx context.Context, bucket string) error { return g.create(ctx, bucket, nil) }

func (g *GCS) create(ctx context.Context, bucket string, attrs *storage.BucketAttrs) error {
	project, err := g.ProjectID(ctx)
	if err != nil {
		return fmt.Errorf("create gs://%s: %w", bucket, err)
	}
	err = g.Client.Bucket(bucket).Create(ctx, project, attrs)
	if gcsStatus(err) == http.StatusConflict {
		// Ours already (a retried create), or a name someone else holds:
		// only the first may be used.
		if _, aerr := g.Client.Bucket(bucket).Attrs(ctx); aerr == nil {
			return nil
		}
		return fmt.Errorf("create gs://%s: the name is taken by a bucket these credentials cannot read; bucket names are global, pick another: %w", bucket, err)
	}
	return gcsError("create gs://"+bucket, err)
}

func (g *GCS) Delete(ctx context.Context, bucket string) error {
	objs, err := g.List(ctx, bucket, "")
	if err != nil {
		return err
	}
	// Cloud Storage deletes one object a request: eight at a time.
	m := Mount{Store: g, Bucket: bucket}
	err = m.each(ctx, len(objs), func(i int) error {
		err := g.Client.Bucket(bucket).Object(objs[i].Key).Delete(ctx)
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil
		}
		return gcsError("empty gs://"+bucket, err)
	})
	if err != nil {
		return err
	}
	return gcsError("delete gs://"+bucket, g.Client.Bucket(bucket).Delete(ctx))
}

// Close releases the client's connections.
func (g *GCS) Close() error { return g.Client.Close() }

// gcsError wraps err with what was done, and ErrDenied for a 403 (and a
// 401: credentials the service does not take).
func gcsError(what string, err error) error {
	if err == nil {
		return nil
	}
	if s := gcsStatus(err); s == http.StatusForbidden || s == http.StatusUnauthorized {
		return fmt.Errorf("%s: %w (%v)", what, ErrDenied, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func gcsStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}
