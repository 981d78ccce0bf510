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
