package bucket

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Up moves only files whose size or time changed: an unchanged file costs
// a stat, no upload; a symlink is not followed.
func TestUpChangeDetection(t *testing.T) {
	ctx := context.Background()
	st := newMem("b")
	dir := t.TempDir()
	write(t, dir+"/a", "one")
	write(t, dir+"/sub/b", "two")
	m := Mount{Store: st, Bucket: "b", Prefix: "ck/", Dir: dir}
	man := Manifest{}
	res, err := m.Up(ctx, man)
	if err != nil || res.Files != 2 || res.Bytes != 6 {
		t.Fatalf("first Up = %+v, %v; want 2 files, 6 bytes", res, err)
	}
	if string(st.buckets["b"]["ck/sub/b"]) != "two" {
		t.Fatalf("bucket holds %q", st.buckets["b"])
	}
	if err := os.Symlink("/nonexistent", dir+"/x"); err != nil {
		t.Fatal(err)
	}
	_, puts := st.counts()
	res, err = m.Up(ctx, man)
	if _, p := st.counts(); err != nil || res.Files != 0 || p != puts {
		t.Fatalf("unchanged Up = %+v, %v; want nothing moved", res, err)
	}
	// The same size, a new time: uploaded again.
	write(t, dir+"/a", "ONE")
	later := time.Now().Add(time.Hour)
	os.Chtimes(dir+"/a", later, later)
	res, err = m.Up(ctx, man)
	if err != nil || res.Files != 1 || string(st.buckets["b"]["ck/a"]) != "ONE" {
		t.Fatalf("changed Up = %+v, %v, bucket %q; want a uploaded again", res, err, st.buckets["b"]["ck/a"])
	}
	// A manifest saved and loaded again keeps what was seen.
	p := filepath.Join(t.TempDir(), "m.json")
	if err := man.Save(p); err != nil {
		t.Fatal(err)
	}
	back, err := LoadManifest(p)
	if err != nil || len(back) != 2 || back["a"] != man["a"] {
		t.Fatalf("loaded %v, %v; want %v", back, err, man)
	}
}

// Down fetches what the bucket holds under the prefix, and on the next
// pass only what changed; sortie's markers and keys that would leave the
// directory are skipped.
func TestDown(t *testing.T) {
	ctx := context.Background()
	st := newMem("b")
	st.buckets["b"] = map[string][]byte{
		"ck/step-1": []byte("1"), "ck/d/step-2": []byte("22"), "ck/.sortie/source-x": nil,
		"ck/../escape": []byte("no"), "ck/dir/": nil, "other/z": []byte("no"),
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	m := Mount{Store: st, Bucket: "b", Prefix: "ck/", Dir: dir}
	man := Manifest{}
	res, err := m.Down(ctx, man)
	if err != nil || res.Files != 2 || res.Bytes != 3 {
		t.Fatalf("Down = %+v, %v; want 2 files, 3 bytes", res, err)
	}
	if b, _ := os.ReadFile(dir + "/d/step-2"); string(b) != "22" {
		t.Fatalf("d/step-2 holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape")); err == nil {
		t.Fatal("a key with .. was written outside the mount")
	}
	gets, _ := st.counts()
	st.buckets["b"]["ck/step-1"] = []byte("one")
	res, err = m.Down(ctx, man)
	if g, _ := st.counts(); err != nil || res.Files != 1 || g != gets+1 {
		t.Fatalf("second Down = %+v, %v, %d gets; want only step-1 again", res, err, g-gets)
	}
	// An upload right after a download moves nothing.
	if res, err := m.Up(ctx, man); err != nil || res.Files != 0 {
		t.Fatalf("Up after Down = %+v, %v; want nothing", res, err)
	}
}

// A source is uploaded once per content: the marker says it is there.
func TestUploadSourceContentAddressed(t *testing.T) {
	ctx := context.Background()
	st := newMem("b")
	src := t.TempDir()
	write(t, src+"/init/w", "weights")
	m := Mount{Store: st, Bucket: "b", Prefix: ""}
	up, res, err := m.UploadSource(ctx, src+"/init")
	if err != nil || !up || res.Files != 1 {
		t.Fatalf("first = %v %+v %v; want uploaded", up, res, err)
	}
	_, puts := st.counts()
	up, _, err = m.UploadSource(ctx, src+"/init")
	if _, p := st.counts(); err != nil || up || p != puts {
		t.Fatalf("second = %v, %v, %d puts; want skipped", up, err, p-puts)
	}
	write(t, src+"/init/w", "weights2")
	if up, _, err = m.UploadSource(ctx, src+"/init"); err != nil || !up {
		t.Fatalf("changed source = %v, %v; want uploaded", up, err)
	}
	if string(st.buckets["b"]["w"]) != "weights2" {
		t.Fatalf("bucket holds %q", st.buckets["b"]["w"])
	}
	// One file as a source is uploaded as its name.
	write(t, src+"/cfg.yaml", "a: 1")
	if up, _, err = m.UploadSource(ctx, src+"/cfg.yaml"); err != nil || !up || string(st.buckets["b"]["cfg.yaml"]) != "a: 1" {
		t.Fatalf("a file source = %v, %v", up, err)
	}
}
