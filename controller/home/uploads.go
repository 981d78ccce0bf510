package home

import (
	"path/filepath"
	"regexp"
	"strings"
)

// Uploads holds a server's uploads: each archive under blobs, named by its
// SHA-256, and unpacked under trees/SHA-256, the root its files are read
// through.
func Uploads(home string) string { return filepath.Join(home, "uploads") }

var digestName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// InUpload says whether p is in an unpacked upload of home, and if so
// which: tree is the upload's root (under trees, or the "unpacked" of
// servers before it), rel the path under it, "." for the root itself.
// A file of an upload is read through its root, never by its path.
func InUpload(home, p string) (tree, rel string, ok bool) {
	if home == "" || !filepath.IsAbs(p) {
		return "", "", false
	}
	r, err := filepath.Rel(Uploads(home), filepath.Clean(p))
	if err != nil {
		return "", "", false
	}
	parts := strings.SplitN(filepath.ToSlash(r), "/", 3)
	if len(parts) < 2 || (parts[0] != "trees" && parts[0] != "unpacked") || !digestName.MatchString(parts[1]) {
		return "", "", false
	}
	tree = filepath.Join(Uploads(home), parts[0], parts[1])
	rel = "."
	if len(parts) == 3 {
		rel = parts[2]
	}
	return tree, rel, true
}
