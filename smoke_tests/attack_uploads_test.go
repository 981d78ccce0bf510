package smoke_tests

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sortie/controller/contract"
	"sortie/controller/lifecycle"
)

// call sends one API request with tok and returns its status and body.
func (s *server) call(tok, method, path string, body []byte) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// putBlob uploads ar as tok's user and returns its digest.
func (s *server) putBlob(tok string, ar []byte) string {
	s.t.Helper()
	sum := sha256.Sum256(ar)
	d := hex.EncodeToString(sum[:])
	if code, body := s.call(tok, "PUT", "/v1/blobs/"+d, ar); code != http.StatusCreated && code != http.StatusOK {
		s.t.Fatalf("PUT blob: %d %s", code, body)
	}
	return d
}

// launchRaw posts a launch of task with inputs as tok's user.
func (s *server) launchRaw(tok, task string, inputs map[string]contract.Upload) (int, string) {
	s.t.Helper()
	b, err := json.Marshal(contract.LaunchRequest{Task: []byte(task), Inputs: inputs})
	if err != nil {
		s.t.Fatal(err)
	}
	return s.call(tok, "POST", "/v1/jobs", b)
}

// tarOf makes a tar archive of entries.
func tarOf(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, ModTime: time.Unix(0, 0), Typeflag: e.kind, Linkname: e.link, Size: int64(len(e.body))}
		if e.kind == tar.TypeDir {
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type tarEntry struct {
	name string
	kind byte
	link string
	body string
}

// An upload's symlinks cannot leave it in two steps: a link to "../.."
// deep in the tree, and a link that goes through it and then up past the
// upload's root to another user's secrets. Mounted as a single file, the
// chain is refused, and the secret never reaches the attacker's task.
func TestAttackUploadSymlinkChain(t *testing.T) {
	s := startServer(t)
	alice, _ := s.user("alice", false)
	_, bobTok := s.user("bob", false)

	const secret = "alices-secret-4d1f9e2b7c"
	job := alice.launch(alice.write("long.yaml", "resources: {cloud: local}\nsecrets: {TOKEN: "+secret+"}\nrun: sleep 120\n"))
	defer func() {
		alice.run("jobs", "cancel", strconv.FormatInt(job, 10), "-y")
		alice.waitStatus(job, lifecycle.Cancelled)
	}()
	alice.waitFor(job, 30*time.Second, "running", func(d contractJob) bool { return d.Status == lifecycle.Running })
	if _, err := os.Stat(filepath.Join(s.home, "secrets", fmt.Sprintf("%d.json", job))); err != nil {
		t.Fatalf("alice's secret is not where the attack aims: %v", err)
	}

	// The upload is unpacked at SORTIE_HOME/uploads/<dir>/<digest>: three
	// levels up is SORTIE_HOME.
	ar := tarOf(t,
		tarEntry{name: "a/", kind: tar.TypeDir},
		tarEntry{name: "a/b/", kind: tar.TypeDir},
		tarEntry{name: "a/b/c", kind: tar.TypeSymlink, link: "../.."},
		tarEntry{name: "f", kind: tar.TypeSymlink, link: fmt.Sprintf("a/b/c/../../../secrets/%d.json", job)},
	)
	d := s.putBlob(bobTok, ar)
	task := "file_mounts: {leak.json: ./f}\nresources: {cloud: local}\nrun: cat leak.json; echo; echo end-of-leak\n"
	code, body := s.launchRaw(bobTok, task, map[string]contract.Upload{"./f": {SHA256: d, File: "f"}})
	if strings.Contains(body, secret) {
		t.Fatalf("the launch's answer holds alice's secret: %s", body)
	}
	if strings.Contains(body, s.home) {
		t.Errorf("the launch's answer names the server's home %s: %s", s.home, body)
	}
	if code == http.StatusCreated {
		var res contract.LaunchResult
		if err := json.Unmarshal([]byte(body), &res); err != nil || res.Job == nil {
			t.Fatalf("launch answer %s: %v", body, err)
		}
		got := s.waitFor(res.Job.ID, 60*time.Second, "ended", func(d contractJob) bool { return isTerminal(d.Status) })
		logs := s.run("jobs", "logs", strconv.FormatInt(res.Job.ID, 10))
		if strings.Contains(logs.stdout+logs.stderr, secret) {
			t.Fatalf("bob's task read alice's secret through the upload's links (job %s):\n%s", got.Status, logs.stdout)
		}
		if got.Status == lifecycle.Succeeded {
			t.Fatalf("bob's job of an escaping link ended %s", got.Status)
		}
		return
	}
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `symlink \"f\" leads outside`) {
		t.Fatalf("launch: %d %s; want 422 naming the symlink f", code, body)
	}
	// Nothing of the refused upload stays unpacked.
	filepath.WalkDir(filepath.Join(s.home, "uploads"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && de.Type()&fs.ModeSymlink != 0 {
			t.Errorf("a link of the refused upload stayed: %s", p)
		}
		return nil
	})
}

// contractJob is a job as the CLI shows it.
type contractJob = contract.JobDetail

// sparseTar is a PAX archive of one GNU sparse (1.0) file that claims
// realsize bytes and holds one: a reader that fills the holes writes
// realsize bytes. The archive is padded to tar's usual 10,240 bytes.
func sparseTar(realsize int64) []byte {
	var buf bytes.Buffer
	block := func(name string, size int64, flag byte) []byte {
		h := make([]byte, 512)
		copy(h[0:], name)
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
		return h
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
	pax := record("GNU.sparse.major", "1") + record("GNU.sparse.minor", "0") +
		record("GNU.sparse.name", "big.bin") + record("GNU.sparse.realsize", strconv.FormatInt(realsize, 10))
	buf.Write(block("PaxHeaders/big.bin", int64(len(pax)), tar.TypeXHeader))
	buf.WriteString(pax)
	pad()
	sparseMap := fmt.Sprintf("1\n%d\n1\n", realsize-1)
	data := make([]byte, 512+1)
	copy(data, sparseMap)
	data[512] = 'x'
	buf.Write(block("GNUSparseFile.0/big.bin", int64(len(data)), tar.TypeReg))
	buf.Write(data)
	pad()
	buf.Write(make([]byte, 1024))
	if n := buf.Len() % 10240; n != 0 {
		buf.Write(make([]byte, 10240-n))
	}
	return buf.Bytes()
}

// A sparse archive under --max-upload does not unpack to the size it
// claims: the entry is refused, named, and no large file appears under
// the server's home.
func TestAttackUploadSparseTar(t *testing.T) {
	s := startServerIn(t, newEnv(t), "--max-upload", "100000")
	_, bobTok := s.user("bob", false)

	ar := sparseTar(200 << 20)
	if len(ar) != 10240 {
		t.Fatalf("the archive is %d bytes", len(ar))
	}
	// The archive is what a tar reader takes for a 200 MiB file.
	tr := tar.NewReader(bytes.NewReader(ar))
	if h, err := tr.Next(); err != nil || h.Size != 200<<20 {
		t.Fatalf("the sparse archive reads as %+v, %v", h, err)
	}
	d := s.putBlob(bobTok, ar)
	code, body := s.launchRaw(bobTok, "workdir: code\nresources: {cloud: local}\nrun: ls -l\n",
		map[string]contract.Upload{"code": {SHA256: d}})
	if code == http.StatusCreated {
		t.Errorf("the launch of a sparse upload was taken: %s", body)
	} else if !strings.Contains(body, "sparse") || !strings.Contains(body, "big.bin") {
		t.Errorf("launch: %d %s; want a refusal naming the sparse entry big.bin", code, body)
	}
	if strings.Contains(body, s.home) {
		t.Errorf("the launch's answer names the server's home %s: %s", s.home, body)
	}
	time.Sleep(500 * time.Millisecond)
	filepath.WalkDir(s.home, func(p string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return nil
		}
		if info, err := de.Info(); err == nil && info.Size() > 1<<20 && !strings.HasPrefix(filepath.Base(p), "state.db") {
			t.Errorf("%s is %d bytes after a %d-byte upload", p, info.Size(), len(ar))
		}
		return nil
	})
}

// The API does not look at the server's own disk for a request: a source
// the request did not upload is a problem naming its field, the same for
// a device, a file in the server's home and a path that is not there, and
// no answer names the server's home.
func TestAttackInputsProbeServerDisk(t *testing.T) {
	s := startServer(t)
	_, bobTok := s.user("bob", false)
	if err := os.WriteFile(filepath.Join(s.home, "server-file.txt"), []byte("the server's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	answers := map[string]string{}
	for _, src := range []string{"/dev/zero", filepath.Join(s.home, "server-file.txt"), filepath.Join(s.home, "no-such-file"), "server-file.txt", "secrets"} {
		task := fmt.Sprintf("file_mounts: {/data/x: %q}\nresources: {cloud: local}\nrun: cat /data/x\n", src)
		code, body := s.launchRaw(bobTok, task, nil)
		if code != http.StatusUnprocessableEntity {
			t.Errorf("file_mounts from %s: %d %s; want 422", src, code, body)
			continue
		}
		if !strings.Contains(body, "file_mounts./data/x") || !strings.Contains(body, "not uploaded") {
			t.Errorf("file_mounts from %s: %s; want a problem of file_mounts./data/x saying it was not uploaded", src, body)
		}
		for _, probe := range []string{"character device", "does not exist", "permission denied", "is a directory", "not a regular file"} {
			if strings.Contains(body, probe) {
				t.Errorf("file_mounts from %s: the answer says %q of the server's disk: %s", src, probe, body)
			}
		}
		// The request's own value comes back as written; nothing else
		// names the server's home.
		answer := strings.ReplaceAll(body, src, "SRC")
		if strings.Contains(answer, s.home) {
			t.Errorf("file_mounts from %s: the answer names the server's home %s: %s", src, s.home, body)
		}
		answers[src] = answer
	}
	first := ""
	for _, a := range answers {
		if first == "" {
			first = a
		} else if a != first {
			t.Errorf("the answers differ by what the server's disk holds:\n%s\n%s", first, a)
			break
		}
	}

	code, body := s.launchRaw(bobTok, "workdir: /dev\nresources: {cloud: local}\nrun: ls\n", nil)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "workdir") || strings.Contains(body, s.home) {
		t.Errorf("workdir /dev: %d %s", code, body)
	}

	// An upload names a file it does not hold: the problem names the field
	// and the upload, not where the server keeps it.
	d := s.putBlob(bobTok, tarOf(t, tarEntry{name: "a.txt", kind: tar.TypeReg, body: "a\n"}))
	code, body = s.launchRaw(bobTok, "file_mounts: {m.txt: ./m.txt}\nresources: {cloud: local}\nrun: cat m.txt\n",
		map[string]contract.Upload{"./m.txt": {SHA256: d, File: "m.txt"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "file_mounts.m.txt") || strings.Contains(body, s.home) {
		t.Errorf("an upload without the file it names: %d %s", code, body)
	}
	// A workdir whose upload is a single file.
	code, body = s.launchRaw(bobTok, "workdir: code\nresources: {cloud: local}\nrun: ls\n",
		map[string]contract.Upload{"code": {SHA256: d, File: "a.txt"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "workdir") || strings.Contains(body, s.home) {
		t.Errorf("a workdir uploaded as a file: %d %s", code, body)
	}
	// A storage mount's local source is an upload too.
	code, body = s.launchRaw(bobTok, "file_mounts: {/d: {name: sortie-attack-bkt, store: s3, source: secrets}}\nresources: {cloud: local}\nrun: ls /d\n", nil)
	if code == http.StatusCreated || strings.Contains(body, s.home) || !strings.Contains(body, "file_mounts./d.source") {
		t.Errorf("a storage mount from the server's secrets: %d %s", code, body)
	}
}
