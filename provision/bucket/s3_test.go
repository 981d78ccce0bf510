package bucket

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"sortie/provision/internal/testenv"
)

// createTwice makes a bucket that is not there yet, twice (the second
// Create, of one's own bucket, is no error), and finds it.
func createTwice(t *testing.T, st Store, name string) {
	t.Helper()
	ctx := context.Background()
	if ok, err := st.Exists(ctx, name); err != nil || ok {
		t.Fatalf("Exists before Create = %v, %v; want false", ok, err)
	}
	for range 2 {
		if err := st.Create(ctx, name); err != nil {
			t.Fatalf("Create of %s: %v", name, err)
		}
	}
	if ok, err := st.Exists(ctx, name); err != nil || !ok {
		t.Fatalf("Exists after Create = %v, %v", ok, err)
	}
}

// newMotoS3 is an S3 store on a moto_server of the test's own, found as a
// user's would be: AWS_ENDPOINT_URL_S3 and the standard credentials.
func newMotoS3(t *testing.T) *S3 {
	t.Helper()
	m := testenv.StartMoto(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", m.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	s, err := NewS3(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The S3 store against moto's S3: a bucket made, synced both ways, found,
// and deleted with its objects.
func TestS3OnMoto(t *testing.T) {
	ctx := context.Background()
	s := newMotoS3(t)
	createTwice(t, s, "ckpts")
	src := t.TempDir()
	write(t, src+"/step-1", "1")
	write(t, src+"/d/step-2", strings.Repeat("x", 1<<20))
	up := Mount{Store: s, Bucket: "ckpts", Prefix: "run/", Dir: src}
	man := Manifest{}
	if res, err := up.Up(ctx, man); err != nil || res.Files != 2 {
		t.Fatalf("Up = %+v, %v", res, err)
	}
	if res, err := up.Up(ctx, man); err != nil || res.Files != 0 {
		t.Fatalf("unchanged Up = %+v, %v", res, err)
	}
	dst := t.TempDir()
	down := Mount{Store: s, Bucket: "ckpts", Prefix: "run/", Dir: dst}
	dman := Manifest{}
	if res, err := down.Down(ctx, dman); err != nil || res.Files != 2 || res.Bytes != 1+1<<20 {
		t.Fatalf("Down = %+v, %v", res, err)
	}
	if b, _ := os.ReadFile(dst + "/d/step-2"); len(b) != 1<<20 {
		t.Fatalf("downloaded %d bytes", len(b))
	}
	if res, err := down.Down(ctx, dman); err != nil || res.Files != 0 {
		t.Fatalf("second Down = %+v, %v; want nothing (ETags match)", res, err)
	}
	if err := s.Delete(ctx, "ckpts"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Exists(ctx, "ckpts"); err != nil || ok {
		t.Fatalf("Exists after Delete = %v, %v", ok, err)
	}
	if _, err := s.List(ctx, "nope", ""); err == nil || errors.Is(err, ErrDenied) {
		t.Fatalf("List of a missing bucket: %v", err)
	}
}

// Several local sources for one bucket, on moto's S3: each is uploaded
// under its base name (a file as NAME, a directory's files under NAME/),
// as SkyPilot uploads a list of sources, and an unchanged source moves
// nothing the second time.
func TestUploadEachOnMoto(t *testing.T) {
	ctx := context.Background()
	s := newMotoS3(t)
	createTwice(t, s, "several")
	home := t.TempDir()
	write(t, home+"/mydir/myfile.txt", "one file")
	write(t, home+"/datasets/train/a.csv", "a,b")
	write(t, home+"/datasets/test.csv", "c,d")
	m := Mount{Store: s, Bucket: "several", Prefix: ""}
	up, res, err := m.UploadEach(ctx, []string{home + "/mydir/myfile.txt", home + "/datasets/"})
	if err != nil || up != 2 || res.Files != 3 {
		t.Fatalf("UploadEach = %d, %+v, %v; want 2 sources, 3 files", up, res, err)
	}
	objs, err := s.List(ctx, "several", "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, MarkerPrefix) && !strings.Contains(o.Key, "/"+MarkerPrefix) {
			keys = append(keys, o.Key)
		}
	}
	if want := []string{"datasets/test.csv", "datasets/train/a.csv", "myfile.txt"}; strings.Join(keys, " ") != strings.Join(want, " ") {
		t.Errorf("the bucket holds %v, want %v", keys, want)
	}
	dst := t.TempDir()
	if _, err := (Mount{Store: s, Bucket: "several", Dir: dst}).Down(ctx, Manifest{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst + "/datasets/train/a.csv"); string(b) != "a,b" {
		t.Errorf("the node reads datasets/train/a.csv as %q", b)
	}
	if up, res, err := m.UploadEach(ctx, []string{home + "/mydir/myfile.txt", home + "/datasets"}); err != nil || up != 0 || res.Files != 0 {
		t.Errorf("unchanged sources again = %d, %+v, %v; want nothing moved", up, res, err)
	}
	write(t, home+"/datasets/test.csv", "changed")
	if up, _, err := m.UploadEach(ctx, []string{home + "/mydir/myfile.txt", home + "/datasets"}); err != nil || up != 1 {
		t.Errorf("one changed source = %d, %v; want it alone uploaded", up, err)
	}
	if _, _, err := m.UploadEach(ctx, []string{home + "/missing"}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing source: %v", err)
	}
}
