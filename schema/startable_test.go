package schema

import (
	"errors"
	"strings"
	"testing"
)

// What no node can start is refused at parse, with the field: a start would
// fail the same way on every node and attempt.
func TestWhatNoNodeCanStartIsRefused(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"run: x\nfile_mounts:\n  ../../etc/x: ./a\n", `file_mounts.../../etc/x: "../../etc/x" holds ".."`},
		{"run: x\nfile_mounts:\n  /data/../etc: ./a\n", `holds ".."`},
		{"run: x\nfile_mounts:\n  x/..: ./a\n", `holds ".."`},
		{"run: x\nenvs:\n  A: \"x\\0y\"\n", "envs.A: holds a NUL byte, which no environment variable can carry"},
		{"run: x\nsecrets:\n  T: \"hunter2\\0\"\n", "secrets.T: holds a NUL byte"},
	} {
		_, err := Parse([]byte(tc.yaml), testClouds())
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want a validation error with %q", tc.yaml, err, tc.want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the error shows the secret: %v", tc.yaml, err)
		}
	}
	for _, ok := range []string{
		"run: x\nfile_mounts:\n  ..data/x..y/...: ./a\n",
		"run: x\nfile_mounts:\n  ~/data: ./a\n",
		"run: x\nenvs:\n  A: \"tab\\there\"\n",
	} {
		if _, err := Parse([]byte(ok), testClouds()); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
