package api

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

type entry struct {
	name string
	kind byte
	link string
	body string
}

func archive(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.kind, Linkname: e.link, Size: int64(len(e.body))}
		if e.kind != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// paxSparse is a PAX archive of one GNU sparse file that claims realsize
// bytes and holds one, in the 1.0 form (the map in the data) or the 0.1
// form (the map in a record).
func paxSparse(realsize int64, form string) []byte {
	var buf bytes.Buffer
	header := func(name string, size int64, flag byte) {
		h := make([]byte, 512)
		copy(h, name)
		copy(h[100:], "0000644\x00")
		copy(h[108:], "0000000\x00")
		copy(h[116:], "0000000\x00")
		copy(h[124:], fmt.Sprintf("%011o\x00", size))
		copy(h[136:], "00000000000\x00")
		h[156] = flag
		copy(h[257:], "ustar\x0000")
		copy(h[148:], "        ")
		sum := 0
		for _, c := range h {
			sum += int(c)
		}
		copy(h[148:], fmt.Sprintf("%06o\x00 ", sum))
		buf.Write(h)
	}
	pad := func() {
		if n := buf.Len() % 512; n != 0 {
			buf.Write(make([]byte, 512-n))
		}
	}
	record := func(k, v string) string {
		r := " " + k + "=" + v + "\n"
		n := len(r)
		for len(strconv.Itoa(n))+len(r) != n {
			n = len(strconv.Itoa(n)) + len(r)
		}
		return strconv.Itoa(n) + r
	}
	var pax string
	var data []byte
	if form == "1.0" {
		pax = record("GNU.sparse.major", "1") + record("GNU.sparse.minor", "0") +
			record("GNU.sparse.name", "big.bin") + record("GNU.sparse.realsize", strconv.FormatInt(realsize, 10))
		data = make([]byte, 513)
		copy(data, fmt.Sprintf("1\n%d\n1\n", realsize-1))
		data[512] = 'x'
	} else {
		pax = record("GNU.sparse.size", strconv.FormatInt(realsize, 10)) + record("GNU.sparse.numblocks", "1") +
			record("GNU.sparse.map", fmt.Sprintf("%d,1", realsize-1)) + record("GNU.sparse.name", "big.bin")
		data = []byte("x")
	}
	header("PaxHeaders/big.bin", int64(len(pax)), tar.TypeXHeader)
	buf.WriteString(pax)
	pad()
	header("GNUSparseFile.0/big.bin", int64(len(data)), tar.TypeReg)
	buf.Write(data)
	pad()
	buf.Write(make([]byte, 1024))
	return buf.Bytes()
}

// An archive unpacks its files, directories and links that stay inside,
// dangling ones too; nothing else is made.
func TestUntarUnpacks(t *testing.T) {
	dir := t.TempDir()
	ar := archive(t,
		entry{name: "a/", kind: tar.TypeDir},
		entry{name: "a/x.txt", kind: tar.TypeReg, body: "x"},
		entry{name: "b/y.txt", kind: tar.TypeReg, body: "yy"},
		entry{name: "a/up", kind: tar.TypeSymlink, link: "../b/y.txt"},
		entry{name: "dangling", kind: tar.TypeSymlink, link: "not/there"},
		entry{name: "b/self", kind: tar.TypeSymlink, link: "."},
	)
	if err := Untar(bytes.NewReader(ar), dir, 3); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a/x.txt": "x", "b/y.txt": "yy", "a/up": "yy"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q %v, want %q", name, b, err, want)
		}
	}
}

// Every way out of the archive, or past its bounds, refuses it with an
// UnpackError naming the entry and no path of the server's.
func TestUntarRefuses(t *testing.T) {
	big := strings.Repeat("z", 600)
	for _, c := range []struct {
		name, want string
		ar         func(t *testing.T) []byte
	}{
		{"dot-dot", `"../x"`, func(t *testing.T) []byte { return archive(t, entry{name: "../x", kind: tar.TypeReg, body: "x"}) }},
		{"absolute link", `"l"`, func(t *testing.T) []byte { return archive(t, entry{name: "l", kind: tar.TypeSymlink, link: "/etc"}) }},
		{"escaping link", `"a/l"`, func(t *testing.T) []byte {
			return archive(t, entry{name: "a/l", kind: tar.TypeSymlink, link: "../../x"})
		}},
		{"through a link", `"l/m"`, func(t *testing.T) []byte {
			return archive(t, entry{name: "l", kind: tar.TypeSymlink, link: "."}, entry{name: "l/m", kind: tar.TypeSymlink, link: ".."})
		}},
		{"two-step chain", `symlink "f" leads outside`, func(t *testing.T) []byte {
			return archive(t,
				entry{name: "a/", kind: tar.TypeDir}, entry{name: "a/b/", kind: tar.TypeDir},
				entry{name: "a/b/c", kind: tar.TypeSymlink, link: "../.."},
				entry{name: "f", kind: tar.TypeSymlink, link: "a/b/c/../../../secrets/6.json"})
		}},
		{"two-step chain, outer link first", `symlink "f" leads outside`, func(t *testing.T) []byte {
			return archive(t,
				entry{name: "f", kind: tar.TypeSymlink, link: "a/b/c/../../../x"},
				entry{name: "a/b/c", kind: tar.TypeSymlink, link: "../.."})
		}},
		{"loop", `"p"`, func(t *testing.T) []byte {
			return archive(t, entry{name: "p", kind: tar.TypeSymlink, link: "q"}, entry{name: "q", kind: tar.TypeSymlink, link: "p"})
		}},
		{"hard link", `"h"`, func(t *testing.T) []byte {
			return archive(t, entry{name: "x", kind: tar.TypeReg, body: "x"}, entry{name: "h", kind: tar.TypeLink, link: "x"})
		}},
		{"twice", `"x"`, func(t *testing.T) []byte {
			return archive(t, entry{name: "x", kind: tar.TypeReg, body: "x"}, entry{name: "x", kind: tar.TypeReg, body: "y"})
		}},
		{"sparse 1.0", `entry "big.bin" is a sparse file`, func(*testing.T) []byte { return paxSparse(200<<20, "1.0") }},
		{"sparse 0.1", `entry "big.bin" is a sparse file`, func(*testing.T) []byte { return paxSparse(200<<20, "0.1") }},
		{"one file over", `more than 1000 bytes (--max-upload) at entry "b"`, func(t *testing.T) []byte {
			return archive(t, entry{name: "a", kind: tar.TypeReg, body: "a"}, entry{name: "b", kind: tar.TypeReg, body: big + big})
		}},
		{"files over together", `more than 1000 bytes (--max-upload) at entry "d/b"`, func(t *testing.T) []byte {
			return archive(t, entry{name: "d/a", kind: tar.TypeReg, body: big}, entry{name: "d/b", kind: tar.TypeReg, body: big})
		}},
	} {
		dir := t.TempDir()
		err := Untar(bytes.NewReader(c.ar(t)), dir, 1000)
		var ue *UnpackError
		switch {
		case err == nil:
			t.Errorf("%s: unpacked", c.name)
		case !errors.As(err, &ue):
			t.Errorf("%s: %v is not the archive's fault", c.name, err)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: %v; want it to say %s", c.name, err, c.want)
		case strings.Contains(err.Error(), dir):
			t.Errorf("%s: %v names the server's directory", c.name, err)
		}
		var total int64
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				info, _ := d.Info()
				total += info.Size()
			}
			return nil
		})
		if total > 1000 {
			t.Errorf("%s: %d bytes written under a bound of 1000", c.name, total)
		}
	}
}

// A refused upload leaves no tree behind, and its refusal names the
// upload, not where the server keeps it.
func TestUploadsPathRefusesAndCleansUp(t *testing.T) {
	u := &Uploads{Dir: t.TempDir(), Max: 1 << 20}
	ar := paxSparse(200<<20, "1.0")
	d := digest(ar)
	os.MkdirAll(filepath.Join(u.Dir, "blobs"), 0o700)
	if err := os.WriteFile(u.blob(d), ar, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := u.Path(d)
	if err == nil || !strings.Contains(err.Error(), "sparse") || strings.Contains(err.Error(), u.Dir) {
		t.Fatalf("Path of a sparse upload: %v", err)
	}
	left, _ := os.ReadDir(filepath.Join(u.Dir, "trees"))
	if len(left) != 0 {
		t.Errorf("a refused upload left %v", left)
	}
}
