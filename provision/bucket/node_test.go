package bucket

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sortie/provision/node/agent"
)

// nodeDir lays out a node directory with a spec and a working directory.
func nodeDir(t *testing.T, spec string) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "attempt-1")
	w := filepath.Join(d, "workdir")
	if err := os.MkdirAll(w, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d, "cwd"), w)
	write(t, filepath.Join(d, FileSpec), spec)
	return d
}

// A node's download and uploads: relative paths under the working
// directory, uploads only for MOUNT_CACHED, and the state the agent
// reports, with when and how much.
func TestNodeSyncs(t *testing.T) {
	ctx := context.Background()
	st := newMem("ck", "data")
	st.buckets["data"]["in/a"] = []byte("abc")
	d := nodeDir(t, `{"interval_ms":30000,"mounts":[{"path":"ckpt","store":"s3","bucket":"ck","mode":"MOUNT_CACHED"},{"path":"data","store":"s3","bucket":"data","prefix":"in/","mode":"COPY"}]}`)
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	n := Node{Dir: d, Open: func(context.Context, string) (Store, error) { return st, nil }, Now: func() time.Time { return now }}
	if err := n.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(d, "workdir/data/a")); string(b) != "abc" {
		t.Fatalf("data/a = %q", b)
	}
	write(t, filepath.Join(d, "workdir/ckpt/step-1"), "1")
	write(t, filepath.Join(d, "workdir/data/new"), "not uploaded: COPY")
	now = now.Add(time.Minute)
	if err := n.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if string(st.buckets["ck"]["step-1"]) != "1" || len(st.buckets["data"]) != 1 {
		t.Fatalf("buckets after Up: %q", st.buckets)
	}
	got, err := ReadState(d)
	if err != nil {
		t.Fatal(err)
	}
	down, up := now.Add(-time.Minute), now
	want := []MountState{
		{Path: "ckpt", Store: "s3", Bucket: "ck", Mode: "MOUNT_CACHED", DownloadedAt: &down, UploadedAt: &up, UploadedBytes: 1, UploadedTotal: 1},
		{Path: "data", Store: "s3", Bucket: "data", Mode: "COPY", DownloadedAt: &down, DownloadedBytes: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("state = %+v\nwant %+v", got, want)
	}
	// A second upload of nothing: the time moves, the bytes are 0, the
	// total stays.
	if err := n.Up(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = ReadState(d)
	if got[0].UploadedBytes != 0 || got[0].UploadedTotal != 1 {
		t.Errorf("after an unchanged upload: %+v", got[0])
	}
}

// MOUNT runs the node's FUSE program; without one it fails naming it.
func TestNodeMount(t *testing.T) {
	d := t.TempDir()
	var argv []string
	n := Node{Open: func(context.Context, string) (Store, error) { return newMem(), nil },
		LookPath: func(p string) (string, error) {
			if p == "mount-s3" {
				return "/usr/bin/mount-s3", nil
			}
			return "", errors.New("none")
		},
		Mount: func(_ context.Context, a []string) error { argv = a; return nil }}
	d2 := nodeDir(t, `{"mounts":[{"path":"`+filepath.Join(d, "mnt")+`","store":"s3","bucket":"ck","prefix":"run/","mode":"MOUNT"}]}`)
	n.Dir = d2
	if err := n.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := "mount-s3 --allow-delete --allow-overwrite --prefix run/ ck " + filepath.Join(d, "mnt"); strings.Join(argv, " ") != want {
		t.Errorf("mounted with %q, want %q", argv, want)
	}
	n.LookPath = func(string) (string, error) { return "", errors.New("none") }
	err := n.Down(context.Background())
	if err == nil || !strings.Contains(err.Error(), "mode MOUNT needs mount-s3 or mountpoint-s3 on the node; use mode: MOUNT_CACHED") {
		t.Errorf("Down without a FUSE program = %v", err)
	}
}

// A 403 is ErrDenied: the bucket is another account's.
func TestS3DeniedIsErrDenied(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer srv.Close()
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	s := NewS3Client(c)
	if _, err := s.Exists(context.Background(), "theirs"); !errors.Is(err, ErrDenied) {
		t.Errorf("Exists on a 403 = %v, want ErrDenied", err)
	}
	if _, err := s.List(context.Background(), "theirs", ""); !errors.Is(err, ErrDenied) {
		t.Errorf("List on a 403 = %v, want ErrDenied", err)
	}
}

// A node with no cwd file (a local start in the default working
// directory writes none) has its relative mounts under workdir.
func TestNodeWithoutACwdFileSyncsUnderWorkdir(t *testing.T) {
	st := newMem("data")
	st.buckets["data"]["in/a"] = []byte("abc")
	d := nodeDir(t, `{"interval_ms":30000,"mounts":[{"path":"data","store":"s3","bucket":"data","prefix":"in/","mode":"COPY"}]}`)
	if err := os.Remove(filepath.Join(d, "cwd")); err != nil {
		t.Fatal(err)
	}
	n := Node{Dir: d, Open: func(context.Context, string) (Store, error) { return st, nil }}
	if err := n.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(d, "workdir/data/a")); string(b) != "abc" {
		t.Errorf("workdir/data/a: %q, %v; want the bucket's file", b, err)
	}
}

// A ~/ destination is in the node's HOME, never a folder named ~; an
// absolute one on a node whose tasks run in a sandbox is in the node
// directory's mounts folder, which the sandbox shows at that path, and
// the machine's own path is never written.
func TestNodeHomeAndSandboxedAbsolutePaths(t *testing.T) {
	st := newMem("data")
	st.buckets["data"]["in/a"] = []byte("abc")
	abs := filepath.Join(t.TempDir(), "inputs")
	d := nodeDir(t, `{"interval_ms":30000,"mounts":[{"path":"~/cache","store":"s3","bucket":"data","prefix":"in/","mode":"COPY"},`+
		`{"path":"`+abs+`","store":"s3","bucket":"data","prefix":"in/","mode":"COPY"}]}`)
	write(t, filepath.Join(d, agent.FileSandbox), `{"program":"/usr/bin/bwrap","mounts":["`+abs+`"]}`)
	home := filepath.Join(t.TempDir(), "home")
	n := Node{Dir: d, Home: home, Open: func(context.Context, string) (Store, error) { return st, nil }}
	if err := n.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(home, "cache/a"), filepath.Join(d, agent.MountsDir, abs, "a")} {
		if b, err := os.ReadFile(p); string(b) != "abc" {
			t.Errorf("%s: %q, %v; want the bucket's file", p, b, err)
		}
	}
	for _, p := range []string{abs, filepath.Join(d, "workdir", "~")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	n.Home = ""
	if err := n.Down(context.Background()); err == nil || !strings.Contains(err.Error(), "~/cache: the node's HOME is not known") {
		t.Errorf("a ~/ path without the node's HOME: %v", err)
	}
}
