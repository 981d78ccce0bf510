package main

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

// A folder the printed shell lines could not hold is refused, naming the
// flag, the path and the way out.
func TestCheckDir(t *testing.T) {
	if err := checkDir("/tmp/sortie-aws-playground-1"); err != nil {
		t.Errorf("a plain path is refused: %v", err)
	}
	for _, dir := range []string{"/tmp/a b", "/tmp/it's", "/tmp/$HOME", "/tmp/a;b"} {
		err := checkDir(dir)
		if err == nil || !strings.Contains(err.Error(), "-dir ") || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "give another folder") {
			t.Errorf("checkDir(%q) = %v, want an error naming -dir, the path and the fix", dir, err)
		}
	}
}

// An interrupt names an instance by its id, or a job (and a node); any
// other value is refused before EC2 is asked, naming the field and what to give.
func TestInterruptNamesAnInstance(t *testing.T) {
	id, err := instance(context.Background(), "http://127.0.0.1:0", url.Values{"instance": {"i-0123abcd"}})
	if err != nil || id != "i-0123abcd" {
		t.Errorf("instance=i-0123abcd: %q, %v", id, err)
	}
	for _, q := range []url.Values{{}, {"instance": {"zz"}}, {"instance": {"i-../../etc"}}} {
		_, err := instance(context.Background(), "http://127.0.0.1:0", q)
		if err == nil || !strings.Contains(err.Error(), "instance=") || !strings.Contains(err.Error(), "job=N") {
			t.Errorf("%v: %v, want an error naming instance= and job=N", q, err)
		}
	}
}
