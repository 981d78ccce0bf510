package bucket

import (
	"context"
	"strings"
	"testing"
	"time"
)

// listed is a Store whose listing is fixed.
type listed struct {
	Store
	objs []Object
}

func (l listed) List(_ context.Context, _, prefix string) ([]Object, error) {
	var out []Object
	for _, o := range l.objs {
		if strings.HasPrefix(o.Key, prefix) {
			out = append(out, o)
		}
	}
	return out, nil
}

func TestNewest(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := listed{objs: []Object{
		{Key: "run/ckpt-1", Modified: t0},
		{Key: "run/ckpt-3", Modified: t0.Add(2 * time.Minute)},
		{Key: "run/ckpt-2", Modified: t0.Add(2 * time.Minute)},
		{Key: "run/.sortie/source-abc", Modified: t0.Add(time.Hour)},
		{Key: "other/late", Modified: t0.Add(time.Hour)},
	}}
	o, ok, err := Newest(ctx, st, "b", "run/")
	if err != nil || !ok || o.Key != "run/ckpt-3" {
		t.Errorf("Newest = %+v, %v, %v; want run/ckpt-3 (of two alike, the greater key; markers and other prefixes left out)", o, ok, err)
	}
	if o, ok, err := Newest(ctx, st, "b", "none/"); err != nil || ok {
		t.Errorf("Newest of an empty prefix = %+v, %v, %v; want none", o, ok, err)
	}
	if o, ok, _ := Newest(ctx, listed{objs: st.objs[3:4]}, "b", "run/"); ok {
		t.Errorf("Newest of markers only = %+v, want none", o)
	}
}

// On the GCS stand-in: the object last written, by its updated time.
func TestNewestOnGCS(t *testing.T) {
	ctx := context.Background()
	g, f := newFakeGCS(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.PutAt("ckpts", "run/ckpt-2", []byte("2"), t0.Add(time.Minute))
	f.PutAt("ckpts", "run/ckpt-1", []byte("1"), t0)
	f.PutAt("ckpts", "run/ckpt-10", []byte("10"), t0.Add(time.Hour))
	f.PutAt("ckpts", "run/.sortie/m", []byte{}, t0.Add(2*time.Hour))
	o, ok, err := Newest(ctx, g, "ckpts", "run/")
	if err != nil || !ok || o.Key != "run/ckpt-10" || !o.Modified.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Newest = %+v, %v, %v; want run/ckpt-10 at %s", o, ok, err, t0.Add(time.Hour))
	}
	if _, _, err := Newest(ctx, g, "nope", ""); err == nil {
		t.Error("Newest of a missing bucket: no error")
	}
}

// On moto's S3: an object just written is the newest, with the time S3
// gave it.
func TestNewestOnMoto(t *testing.T) {
	ctx := context.Background()
	s := newMotoS3(t)
	createTwice(t, s, "ckpts")
	before := time.Now().Add(-time.Minute)
	for _, k := range []string{"run/ckpt-1", "run/ckpt-2"} {
		if _, err := s.Put(ctx, "ckpts", k, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	o, ok, err := Newest(ctx, s, "ckpts", "run/")
	if err != nil || !ok || o.Key != "run/ckpt-2" || o.Modified.Before(before) || o.Modified.After(time.Now().Add(time.Minute)) {
		t.Fatalf("Newest = %+v, %v, %v; want run/ckpt-2, modified now", o, ok, err)
	}
}
