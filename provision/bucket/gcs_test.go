package bucket

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/googleapis/gax-go/v2"

	"sortie/provision/bucket/gcstest"
)

// newFakeGCS is a GCS store on a stand-in of the test's own, found as a
// user's emulator would be: STORAGE_EMULATOR_HOST.
func newFakeGCS(t *testing.T) (*GCS, *gcstest.Server) {
	t.Helper()
	f := gcstest.Start(t)
	t.Setenv("STORAGE_EMULATOR_HOST", f.Host)
	t.Setenv("GOOGLE_CLOUD_PROJECT", "test-project")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	g, err := NewGCS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, f
}

// The GCS store through cloud.google.com/go/storage: a bucket made (twice
// is fine), synced both ways with a listing of several pages, a large
// file in a resumable upload of several requests, an unchanged second
// sync that lists and moves no byte, and the bucket deleted with its
// objects.
func TestGCSOnStandIn(t *testing.T) {
	ctx := context.Background()
	g, f := newFakeGCS(t)
	g.ChunkSize = 256 << 10 // the smallest the API takes: a 1 MiB file is four requests
	f.SetPageSize(1)
	createTwice(t, g, "ckpts")
	src := t.TempDir()
	write(t, src+"/step-1", "1")
	write(t, src+"/d/step-2", strings.Repeat("x", 1<<20))
	write(t, src+"/empty", "")
	up := Mount{Store: g, Bucket: "ckpts", Prefix: "run/", Dir: src}
	man := Manifest{}
	if res, err := up.Up(ctx, man); err != nil || res.Files != 3 {
		t.Fatalf("Up = %+v, %v", res, err)
	}
	// 1 MiB is four full chunks, then an empty last request that says the
	// total (the client cannot know the fourth was the last).
	if f.Calls("upload.resumable") != 1 || f.Calls("upload.chunk") != 5 || f.Calls("upload.multipart") != 2 {
		t.Errorf("uploads: %d resumable sessions, %d chunks, %d single requests; want 1, 5 (1 MiB in 256 KiB, then the end) and 2",
			f.Calls("upload.resumable"), f.Calls("upload.chunk"), f.Calls("upload.multipart"))
	}
	if b, ok := f.Object("ckpts", "run/d/step-2"); !ok || len(b) != 1<<20 {
		t.Fatalf("the bucket holds %d bytes of run/d/step-2", len(b))
	}
	if res, err := up.Up(ctx, man); err != nil || res.Files != 0 {
		t.Fatalf("unchanged Up = %+v, %v", res, err)
	}
	dst := t.TempDir()
	down := Mount{Store: g, Bucket: "ckpts", Prefix: "run/", Dir: dst}
	dman := Manifest{}
	if res, err := down.Down(ctx, dman); err != nil || res.Files != 3 || res.Bytes != 1+1<<20 {
		t.Fatalf("Down = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(dst + "/d/step-2"); len(b) != 1<<20 {
		t.Fatalf("downloaded %d bytes", len(b))
	}
	if dman["d/step-2"].ETag != man["d/step-2"].ETag || dman["d/step-2"].ETag == "" {
		t.Errorf("the download's ETag %q is not the upload's %q", dman["d/step-2"].ETag, man["d/step-2"].ETag)
	}
	media, lists := f.Calls("object.media"), f.Calls("object.list")
	if res, err := down.Down(ctx, dman); err != nil || res.Files != 0 {
		t.Fatalf("second Down = %+v, %v; want nothing (MD5s match)", res, err)
	}
	if f.Calls("object.media") != media || f.Calls("object.list") != lists+3 {
		t.Errorf("second Down read %d objects' bytes and %d listing pages; want none and 3 (3 objects, a page each)",
			f.Calls("object.media")-media, f.Calls("object.list")-lists)
	}
	// Someone else rewrites one object: only it comes down again.
	f.Put("ckpts", "run/step-1", []byte("one"))
	if res, err := down.Down(ctx, dman); err != nil || res.Files != 1 || res.Bytes != 3 {
		t.Fatalf("Down after a rewrite = %+v, %v; want step-1 alone", res, err)
	}
	if err := g.Delete(ctx, "ckpts"); err != nil {
		t.Fatal(err)
	}
	if ok, err := g.Exists(ctx, "ckpts"); err != nil || ok {
		t.Fatalf("Exists after Delete = %v, %v", ok, err)
	}
	if _, err := g.List(ctx, "nope", ""); err == nil || errors.Is(err, ErrDenied) {
		t.Fatalf("List of a missing bucket: %v", err)
	}
}

// A bucket the credentials may not read is ErrDenied, from Exists on; a
// name someone else holds cannot be created.
func TestGCSDenied(t *testing.T) {
	ctx := context.Background()
	g, f := newFakeGCS(t)
	f.Put("theirs", "x", []byte("x"))
	f.Deny("theirs")
	if _, err := g.Exists(ctx, "theirs"); !errors.Is(err, ErrDenied) {
		t.Fatalf("Exists of a denied bucket: %v; want ErrDenied", err)
	}
	if _, err := g.List(ctx, "theirs", ""); !errors.Is(err, ErrDenied) {
		t.Fatalf("List of a denied bucket: %v; want ErrDenied", err)
	}
	err := g.Create(ctx, "theirs")
	if err == nil || !strings.Contains(err.Error(), "pick another") {
		t.Fatalf("Create of a name someone else holds: %v", err)
	}
}

// Sources go up content-addressed on GCS as on any store: the same
// content again moves nothing.
func TestGCSSource(t *testing.T) {
	ctx := context.Background()
	g, f := newFakeGCS(t)
	if err := g.Create(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir+"/a", "a")
	write(t, dir+"/b/c", "c")
	m := Mount{Store: g, Bucket: "src", Prefix: "p/"}
	if up, res, err := m.UploadSource(ctx, dir); err != nil || !up || res.Files != 2 {
		t.Fatalf("first UploadSource = %v, %+v, %v", up, res, err)
	}
	n := f.Calls("upload.multipart")
	if up, _, err := m.UploadSource(ctx, dir); err != nil || up || f.Calls("upload.multipart") != n {
		t.Fatalf("second UploadSource = %v, %v, %d more uploads; want nothing moved", up, err, f.Calls("upload.multipart")-n)
	}
	if _, ok := f.Object("src", "p/b/c"); !ok {
		t.Fatal("p/b/c is not in the bucket")
	}
}

// Without a project, a bucket cannot be made: the error says which
// setting names one.
func TestGCSCreateNeedsProject(t *testing.T) {
	g, _ := newFakeGCS(t)
	for _, k := range []string{"GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"} {
		t.Setenv(k, "")
	}
	err := g.Create(context.Background(), "new")
	if err == nil || !strings.Contains(err.Error(), "GOOGLE_CLOUD_PROJECT") {
		t.Fatalf("Create without a project: %v", err)
	}
}

func TestOpenStores(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
	st, err := Open(context.Background(), "gcs")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*GCS); !ok {
		t.Fatalf("Open(gcs) = %T", st)
	}
	if _, err := Open(context.Background(), "r2"); err == nil || !strings.Contains(err.Error(), "use s3 or gcs") {
		t.Fatalf("Open(r2): %v", err)
	}
}

// An endpoint that does not answer is an error after a few tries, not a
// sync that waits forever.
func TestGCSUnreachableEnds(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: every connection is refused
	t.Setenv("STORAGE_EMULATOR_HOST", addr)
	g, err := newGCS(context.Background(), gax.Backoff{Initial: time.Millisecond, Max: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := g.Exists(ctx, "ckpts"); err == nil || ctx.Err() != nil {
		t.Fatalf("Exists on a closed port: %v (context: %v); want the connection's error before the minute is up", err, ctx.Err())
	}
}

// Access lists the project's buckets and asks the Resource Manager which
// of the bucket permissions the credentials hold, naming the missing ones;
// against an emulator alone it says IAM was not asked; a refused listing
// is ErrDenied.
func TestGCSAccess(t *testing.T) {
	ctx := context.Background()
	g, f := newFakeGCS(t)
	if err := g.Create(ctx, "mine"); err != nil {
		t.Fatal(err)
	}
	got, err := g.Access(ctx)
	if err != nil || !strings.Contains(got, "project test-project: buckets listed at the emulator "+f.Host) {
		t.Fatalf("Access on the emulator = %q, %v", got, err)
	}
	if f.Calls("bucket.list") != 1 {
		t.Errorf("%d bucket listings, want 1", f.Calls("bucket.list"))
	}
	granted := []string{"storage.buckets.create"}
	var asked string
	rm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = r.Method + " " + r.URL.Path
		json.NewEncoder(w).Encode(map[string][]string{"permissions": granted})
	}))
	defer rm.Close()
	g.ResourceManager, g.HTTPClient = rm.URL, rm.Client()
	got, err = g.Access(ctx)
	if err != nil || got != "project test-project: buckets listed; lacks storage.buckets.delete, which a storage mount whose bucket is new (or persistent: false) needs" {
		t.Fatalf("Access without delete = %q, %v", got, err)
	}
	if asked != "POST /v1/projects/test-project:testIamPermissions" {
		t.Errorf("the Resource Manager was asked %q", asked)
	}
	granted = append(granted, "storage.buckets.delete")
	if got, err = g.Access(ctx); err != nil || got != "project test-project: buckets listed, created and deleted" {
		t.Fatalf("Access with both = %q, %v", got, err)
	}
	f.DenyProject("theirs")
	g.Project = "theirs"
	if _, err := g.Access(ctx); !errors.Is(err, ErrDenied) {
		t.Fatalf("Access to another project: %v; want ErrDenied", err)
	}
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, errors.New("disk read error")
	}
	n := min(len(p), r.n)
	r.n -= n
	return n, nil
}

// A file that cannot be read to its end leaves no object behind, in one
// request or a resumable upload alike (a single request's body used to end
// cleanly after the bytes read, now and then making an object of them).
func TestGCSPutCutShort(t *testing.T) {
	ctx := context.Background()
	g, f := newFakeGCS(t)
	g.ChunkSize = 256 << 10
	if err := g.Create(ctx, "cut"); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{10, 600 << 10} {
		_, err := g.Put(ctx, "cut", "k", &failingReader{n: size / 2}, int64(size))
		if err == nil || !strings.Contains(err.Error(), "disk read error") {
			t.Fatalf("Put of %d bytes whose read fails: %v", size, err)
		}
		if _, ok := f.Object("cut", "k"); ok {
			t.Fatalf("Put of %d bytes cut short left an object", size)
		}
	}
}

// A bucket made in a region reads back there, lower-cased as GCP writes
// regions; one made without is in the multi-region US; a missing one is
// not found.
func TestGCSRegion(t *testing.T) {
	g, f := newFakeGCS(t)
	ctx := context.Background()
	if err := g.CreateIn(ctx, "in-europe", "europe-west4"); err != nil {
		t.Fatal(err)
	}
	if err := g.Create(ctx, "anywhere"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"in-europe": "europe-west4", "anywhere": "us"} {
		got, ok, err := g.Region(ctx, name)
		if err != nil || !ok || got != want {
			t.Errorf("Region(%s) = %q, %v, %v; want %q", name, got, ok, err, want)
		}
	}
	if f.BucketLocation("in-europe") != "EUROPE-WEST4" {
		t.Errorf("the insert asked for location %q, want EUROPE-WEST4", f.BucketLocation("in-europe"))
	}
	if _, ok, err := g.Region(ctx, "no-such"); ok || err != nil {
		t.Errorf("Region of a missing bucket: ok %v, err %v", ok, err)
	}
}
