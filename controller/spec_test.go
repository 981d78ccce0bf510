package controller

import (
	"strings"
	"testing"

	"sortie/controller/store"
)

// A job's pipeline is decoded once for as long as its stored text is the
// same; other text, or another job, is decoded afresh, and a text that
// cannot be decoded is never kept.
func TestSpecIsDecodedOncePerText(t *testing.T) {
	a := []byte(`{"name":"p","tasks":[{"name":"a","run":"true"}]}`)
	b := []byte(`{"name":"p","tasks":[{"name":"b","run":"false"}]}`)
	c := new(Controller)
	j := &store.Job{ID: 1 << 40, Spec: a}
	p1, err := c.spec(j)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c.spec(&store.Job{ID: j.ID, Spec: append([]byte(nil), a...)})
	if err != nil {
		t.Fatal(err)
	}
	if p1 != p2 {
		t.Error("the same text of the same job was decoded again")
	}
	p3, err := c.spec(&store.Job{ID: j.ID, Spec: b})
	if err != nil {
		t.Fatal(err)
	}
	if p3 == p1 || p3.Tasks[0].Name != "b" {
		t.Errorf("another text gave task %q (same pipeline: %v); want b, decoded anew", p3.Tasks[0].Name, p3 == p1)
	}
	if p4, err := c.spec(&store.Job{ID: j.ID + 1, Spec: b}); err != nil || p4 == p3 {
		t.Errorf("another job with the same text: %v, %v; want its own decoding", p4 == p3, err)
	}
	bad := &store.Job{ID: j.ID + 2, Spec: []byte(`{"name":"p","tasks":[]}`)}
	for range 2 {
		if _, err := c.spec(bad); err == nil || !strings.Contains(err.Error(), "no tasks") {
			t.Errorf("spec of a pipeline without tasks: %v", err)
		}
	}
}
