package api

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/home"
	"sortie/controller/lifecycle"
	"sortie/controller/service"
	"sortie/controller/store"
	"sortie/schema"
	"sortie/strategy"
)

type testServer struct {
	*httptest.Server
	svc    *service.Service
	tokens map[string]string
	log    *syncBuffer
	wakes  int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newTestServer serves a fresh home with users alice, bob and root (an
// admin), on 127.0.0.1.
func newTestServer(t *testing.T, o Options) *testServer {
	t.Helper()
	ctx := context.Background()
	h := t.TempDir()
	svc, err := service.Open(ctx, h, clouds.Light())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	ts := &testServer{svc: svc, tokens: map[string]string{}, log: &syncBuffer{}}
	up := &Uploads{Dir: filepath.Join(h, "uploads")}
	ForServer(svc, up, func() { ts.wakes++ })
	for _, u := range []struct {
		name  string
		admin bool
	}{{"alice", false}, {"bob", false}, {"root", true}} {
		tok, hash, err := NewToken()
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Store.AddUser(ctx, u.name, hash, u.admin); err != nil {
			t.Fatal(err)
		}
		ts.tokens[u.name] = tok
	}
	o.Service, o.Store, o.Uploads = svc, svc.Store, up
	o.Log = slog.New(slog.NewJSONHandler(ts.log, nil))
	ts.Server = httptest.NewServer(NewServer(o))
	t.Cleanup(ts.Close)
	return ts
}

// do sends a request as user ("" sends no token) and decodes a JSON answer
// into out when given.
func (ts *testServer) do(t *testing.T, user, method, path string, body any, out any) *http.Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+ts.tokens[user])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp
}

// Every route the mux serves is in the OpenAPI document, and every
// operation of the document is a route.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for p, ops := range doc.Paths {
		for m := range ops {
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	slices.Sort(documented)
	served := slices.Clone(routes)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented:\n%s\nserved:\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
	// And each route answers (not the mux's catch-all).
	ts := newTestServer(t, Options{})
	for _, r := range served {
		method, path, _ := strings.Cut(r, " ")
		path = strings.NewReplacer("{id}", "1", "{key}", "abcd", "{sha256}", strings.Repeat("0", 64)).Replace(path)
		var e contract.ErrorBody
		// As an admin, so that every handler runs (a panic fails do).
		resp := ts.do(t, "root", method, path, nil, nil)
		if resp.StatusCode == http.StatusNotFound && method != "HEAD" {
			ts.do(t, "root", method, path, nil, &e)
			if e.Error.Code == contract.CodeNoRoute {
				t.Errorf("%s is not served", r)
			}
		}
	}
}

func TestAuth(t *testing.T) {
	ts := newTestServer(t, Options{})
	var ok map[string]bool
	if resp := ts.do(t, "", "GET", "/v1/healthz", nil, &ok); resp.StatusCode != 200 || !ok["ok"] {
		t.Fatalf("healthz: %d %v", resp.StatusCode, ok)
	}
	var e contract.ErrorBody
	resp := ts.do(t, "", "GET", "/v1/jobs", nil, &e)
	if resp.StatusCode != 401 || e.Error.Code != contract.CodeUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("no token: %d %+v", resp.StatusCode, e)
	}
	if resp := ts.do(t, "", "GET", "/v1/openapi.json", nil, nil); resp.StatusCode != 401 {
		t.Fatalf("openapi.json without a token: %d", resp.StatusCode)
	}
	var doc map[string]any
	if resp := ts.do(t, "alice", "GET", "/v1/openapi.json", nil, &doc); resp.StatusCode != 200 || doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi.json with a token: %d %v", resp.StatusCode, doc["openapi"])
	}
	ts.tokens["mallory"] = "sortie_not-a-token"
	if resp := ts.do(t, "mallory", "GET", "/v1/jobs", nil, &e); resp.StatusCode != 401 {
		t.Fatalf("unknown token: %d", resp.StatusCode)
	}
	var me contract.Asker
	if resp := ts.do(t, "bob", "GET", "/v1/me", nil, &me); resp.StatusCode != 200 || me.Name != "bob" || me.Admin {
		t.Fatalf("me: %d %+v", resp.StatusCode, me)
	}
	if err := ts.svc.Store.RevokeUser(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
	if resp := ts.do(t, "bob", "GET", "/v1/me", nil, &e); resp.StatusCode != 401 || !strings.Contains(e.Error.Message, "revoked") {
		t.Fatalf("revoked: %d %+v", resp.StatusCode, e)
	}
	// No token ever reaches the log.
	for name, tok := range ts.tokens {
		if strings.Contains(ts.log.String(), tok) {
			t.Errorf("%s's token is in the log", name)
		}
	}
	if !strings.Contains(ts.log.String(), `"user":"alice"`) && !strings.Contains(ts.log.String(), `"user":"bob"`) {
		t.Errorf("the log names no user:\n%s", ts.log.String())
	}
}

// The Bearer scheme is taken in any case; the token is exact, and
// another scheme or no token is none.
func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		auth, token string
		ok          bool
	}{
		{"Bearer sortie_T", "sortie_T", true},
		{"bearer sortie_T", "sortie_T", true},
		{"BEARER sortie_T", "sortie_T", true},
		{"bEaReR   sortie_T ", "sortie_T", true},
		{"Bearer sortie_t", "sortie_t", true},
		{"Bearer", "", false},
		{"Bearer   ", "", false},
		{"Basic sortie_T", "", false},
		{"Bearersortie_T", "", false},
		{"", "", false},
	} {
		if tok, ok := BearerToken(c.auth); tok != c.token || ok != c.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", c.auth, tok, ok, c.token, c.ok)
		}
	}
	ts := newTestServer(t, Options{})
	req, _ := http.NewRequest("GET", ts.URL+"/v1/me", nil)
	req.Header.Set("Authorization", "bearer "+ts.tokens["alice"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("bearer in lower case: %d", resp.StatusCode)
	}
}

// A bad task is 422 with exactly the CLI's problems; a good one is stored
// as its asker's; bob's cancel of alice's job is 403 naming her, alice's
// goes through and records her.
func TestLaunchAndOwnership(t *testing.T) {
	ts := newTestServer(t, Options{})
	var e contract.ErrorBody
	bad := contract.LaunchRequest{File: "bad.yaml", Task: []byte("run: x\nresources: {cpus: many, use_spot: maybe}\n")}
	resp := ts.do(t, "alice", "POST", "/v1/jobs", bad, &e)
	if resp.StatusCode != 422 || e.Error.Code != contract.CodeInvalidTask || len(e.Error.Problems) != 2 {
		t.Fatalf("bad task: %d %+v", resp.StatusCode, e)
	}
	_, perr := schema.Parse(bad.Task, clouds.Schema())
	ve := perr.(*schema.ValidationError)
	for i, p := range ve.Problems {
		if g := e.Error.Problems[i]; g.Path != p.Path || g.Message != p.Message || g.Value != p.Value {
			t.Errorf("problem %d: %+v, want %+v", i, g, p)
		}
	}
	if e.Error.Message != ve.Error() {
		t.Errorf("message %q, want the CLI's %q", e.Error.Message, ve.Error())
	}
	var lr contract.LaunchResult
	resp = ts.do(t, "alice", "POST", "/v1/jobs", contract.LaunchRequest{File: "t.yaml", Task: []byte("run: 'true'\nresources: {cloud: sim}\n")}, &lr)
	if resp.StatusCode != 201 || lr.Job == nil || *lr.Job.Owner != "alice" || ts.wakes == 0 {
		t.Fatalf("launch: %d %+v wakes %d", resp.StatusCode, lr, ts.wakes)
	}
	id := lr.Job.ID
	resp = ts.do(t, "bob", "POST", "/v1/jobs/"+itoa(id)+"/cancel", nil, &e)
	if resp.StatusCode != 403 || e.Error.Code != contract.CodeForbidden || e.Error.Owner != "alice" || e.Error.Job != id ||
		!strings.Contains(e.Error.Message, "belongs to alice") {
		t.Fatalf("bob's cancel: %d %+v", resp.StatusCode, e)
	}
	var jobs []contract.JobView
	if resp := ts.do(t, "bob", "GET", "/v1/jobs?status=PENDING", nil, &jobs); resp.StatusCode != 200 || len(jobs) != 1 {
		t.Fatalf("bob reads the queue: %d %+v", resp.StatusCode, jobs)
	}
	var c contract.Cancelled
	if resp := ts.do(t, "alice", "POST", "/v1/jobs/"+itoa(id)+"/cancel", nil, &c); resp.StatusCode != 200 || !slices.Equal(c.Cancelled, []int64{id}) {
		t.Fatalf("alice's cancel: %d %+v", resp.StatusCode, c)
	}
	var d contract.JobDetail
	ts.do(t, "bob", "GET", "/v1/jobs/"+itoa(id), nil, &d)
	if d.CancelledBy == nil || *d.CancelledBy != "alice" {
		t.Fatalf("cancelled_by: %v", d.CancelledBy)
	}
	if resp := ts.do(t, "bob", "GET", "/v1/jobs/999", nil, &e); resp.StatusCode != 404 || e.Error.Code != contract.CodeNotFound {
		t.Fatalf("no such job: %d %+v", resp.StatusCode, e)
	}
	// A server reads no path of the user's: a task without its content is refused.
	if resp := ts.do(t, "alice", "POST", "/v1/jobs", contract.LaunchRequest{File: "/etc/hostname"}, &e); resp.StatusCode != 400 || e.Error.Code != contract.CodeUsage {
		t.Fatalf("a path alone: %d %+v", resp.StatusCode, e)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestBodyLimits(t *testing.T) {
	ts := newTestServer(t, Options{MaxBody: 1000, MaxUpload: 2000})
	var e contract.ErrorBody
	big := contract.LaunchRequest{File: "t.yaml", Task: bytes.Repeat([]byte("#"), 2000)}
	if resp := ts.do(t, "alice", "POST", "/v1/jobs", big, &e); resp.StatusCode != 413 || e.Error.Code != contract.CodeTooLarge || e.Error.Limit != 1000 {
		t.Fatalf("large body: %d %+v", resp.StatusCode, e)
	}
	blob := bytes.Repeat([]byte("x"), 3000)
	if resp := ts.do(t, "alice", "PUT", "/v1/blobs/"+digest(blob), blob, &e); resp.StatusCode != 413 || e.Error.Limit != 2000 {
		t.Fatalf("large upload: %d %+v", resp.StatusCode, e)
	}
}

func digest(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func tarOf(t *testing.T, files map[string]string, links map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	}) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	for name, target := range links {
		tw.WriteHeader(&tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink})
	}
	tw.Close()
	return buf.Bytes()
}

// An upload is stored under its hash once; a wrong hash is refused; a
// launch naming it runs from it, and its inputs' known failure is shared.
func TestBlobs(t *testing.T) {
	ts := newTestServer(t, Options{})
	ar := tarOf(t, map[string]string{"train.py": "print(1)\n", "data/a.txt": "a"}, nil)
	d := digest(ar)
	if resp := ts.do(t, "alice", "HEAD", "/v1/blobs/"+d, nil, nil); resp.StatusCode != 404 {
		t.Fatalf("HEAD before: %d", resp.StatusCode)
	}
	var e contract.ErrorBody
	if resp := ts.do(t, "alice", "PUT", "/v1/blobs/"+strings.Repeat("1", 64), ar, &e); resp.StatusCode != 400 || e.Error.Code != contract.CodeDigest {
		t.Fatalf("wrong digest: %d %+v", resp.StatusCode, e)
	}
	if resp := ts.do(t, "alice", "PUT", "/v1/blobs/nothex", ar, &e); resp.StatusCode != 400 || e.Error.Code != contract.CodeUsage {
		t.Fatalf("bad name: %d %+v", resp.StatusCode, e)
	}
	var br contract.BlobResult
	if resp := ts.do(t, "alice", "PUT", "/v1/blobs/"+d, ar, &br); resp.StatusCode != 201 || !br.Stored || br.Size != int64(len(ar)) {
		t.Fatalf("PUT: %d %+v", resp.StatusCode, br)
	}
	if resp := ts.do(t, "bob", "PUT", "/v1/blobs/"+d, ar, &br); resp.StatusCode != 200 || br.Stored {
		t.Fatalf("PUT again: %d %+v", resp.StatusCode, br)
	}
	if resp := ts.do(t, "alice", "HEAD", "/v1/blobs/"+d, nil, nil); resp.StatusCode != 200 {
		t.Fatalf("HEAD after: %d", resp.StatusCode)
	}
	task := []byte("workdir: ~/code\nrun: python train.py\nresources: {cloud: sim}\n")
	var lr contract.LaunchResult
	req := contract.LaunchRequest{File: "t.yaml", Task: task, Inputs: map[string]contract.Upload{"~/code": {SHA256: d}}}
	if resp := ts.do(t, "alice", "POST", "/v1/jobs", req, &lr); resp.StatusCode != 201 {
		t.Fatalf("launch from the upload: %d %+v", resp.StatusCode, lr)
	}
	j, _ := ts.svc.Store.Job(context.Background(), lr.Job.ID)
	p, _ := schema.Unmarshal(j.Spec, clouds.Schema())
	got, err := os.ReadFile(filepath.Join(p.Tasks[0].Workdir, "data", "a.txt"))
	if err != nil || string(got) != "a" {
		t.Fatalf("unpacked workdir %s: %q %v", p.Tasks[0].Workdir, got, err)
	}
	if lr.Job.InputKey == nil {
		t.Fatal("no input key")
	}
	// A single file: its upload holds it alone, and the mount is that file.
	far := tarOf(t, map[string]string{"cfg.json": "{}"}, nil)
	ts.do(t, "alice", "PUT", "/v1/blobs/"+digest(far), far, nil)
	req = contract.LaunchRequest{File: "t.yaml", Task: []byte("file_mounts: {/cfg.json: ./cfg.json}\nrun: 'true'\nresources: {cloud: sim}\n"),
		Inputs: map[string]contract.Upload{"./cfg.json": {SHA256: digest(far), File: "cfg.json"}}}
	if resp := ts.do(t, "alice", "POST", "/v1/jobs", req, &lr); resp.StatusCode != 201 {
		t.Fatalf("launch with a file mount: %d %+v", resp.StatusCode, lr)
	}
}

// A job's logs stream as JSON lines: the text, then the end.
func TestLogs(t *testing.T) {
	ts := newTestServer(t, Options{})
	ctx := context.Background()
	st := ts.svc.Store
	id, _ := st.CreateJob(ctx, &store.Job{Name: "j", Spec: []byte(`{}`), Owner: "alice"}, []store.NewTask{{}})
	a, _ := st.NewAttempt(ctx, id, 0, func(int) string { return "c" }, nil, lifecycle.Starting)
	if err := st.MarkLaunched(ctx, a.ID, "local", "local", "local-a", []string{"n0"}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkRunning(ctx, a); err != nil {
		t.Fatal(err)
	}
	zero := 0
	if err := st.EndAttempt(ctx, a, store.Observed{Outcome: strategy.Succeeded, ExitCodes: []*int{&zero}},
		strategy.Decision{Action: strategy.Succeed, Status: lifecycle.Succeeded}, store.Facts{}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(home.JobLogDir(ts.svc.Home, id), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(home.NodeLog(ts.svc.Home, id, 0, a.Attempt, 0), []byte("hello\n\xff\n"), 0o644)
	resp, err := http.NewRequest("GET", ts.URL+"/v1/jobs/"+itoa(id)+"/logs", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Set("Authorization", "Bearer "+ts.tokens["bob"])
	r, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("content type %q", r.Header.Get("Content-Type"))
	}
	dec := json.NewDecoder(r.Body)
	var text []byte
	var end *contract.LogEnd
	for {
		var ev contract.LogEvent
		if err := dec.Decode(&ev); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		text = append(append(text, ev.Text...), ev.Bytes...)
		if ev.End != nil {
			end = ev.End
		}
	}
	if string(text) != "hello\n\xff\n" || end == nil {
		t.Fatalf("log %q, end %+v", text, end)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr          string
		tls, insecure bool
		ok            bool
	}{
		{"127.0.0.1:8080", false, false, true},
		{"localhost:0", false, false, true},
		{"[::1]:8080", false, false, true},
		{"0.0.0.0:8080", false, false, false},
		{"10.1.2.3:8080", false, false, false},
		{":8080", false, false, false},
		{"0.0.0.0:8080", true, false, true},
		{"0.0.0.0:8080", false, true, true},
		{"8080", false, false, false},
	} {
		err := CheckListen(tc.addr, tc.tls, tc.insecure)
		if (err == nil) != tc.ok {
			t.Errorf("%s tls=%t insecure=%t: %v", tc.addr, tc.tls, tc.insecure, err)
		}
	}
}

// Serve speaks TLS with a certificate and key, refuses one without the
// other, and refuses plain HTTP beyond loopback.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "over tls") })
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, h, ServeOptions{Listen: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile, OnListen: func(a net.Addr) { addrs <- a }})
	}()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	cert, _ := x509.ParseCertificate(der)
	pool.AddCert(cert)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get("https://" + addr.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "over tls" {
		t.Fatalf("answer %q", b)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := Serve(context.Background(), h, ServeOptions{Listen: "127.0.0.1:0", TLSCert: certFile}); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("a certificate without its key: %v", err)
	}
	if err := Serve(context.Background(), h, ServeOptions{Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "--insecure") {
		t.Errorf("plain HTTP beyond loopback: %v", err)
	}
}

// GET /v1/jobs takes a page: ?limit=N lists at most N jobs, newest first,
// and ?before=ID the ones below the cursor; a bad value names itself.
func TestQueuePage(t *testing.T) {
	ts := newTestServer(t, Options{})
	var ids []int64
	for range 3 {
		var lr contract.LaunchResult
		if resp := ts.do(t, "alice", "POST", "/v1/jobs", contract.LaunchRequest{File: "t.yaml", Task: []byte("run: 'true'\nresources: {cloud: sim}\n")}, &lr); resp.StatusCode != 201 {
			t.Fatalf("launch: %d", resp.StatusCode)
		}
		ids = append(ids, lr.Job.ID)
	}
	var page []contract.JobView
	ts.do(t, "bob", "GET", "/v1/jobs?limit=2", nil, &page)
	if len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[1] {
		t.Fatalf("the first page: %+v", page)
	}
	ts.do(t, "bob", "GET", "/v1/jobs?limit=2&before="+itoa(ids[1]), nil, &page)
	if len(page) != 1 || page[0].ID != ids[0] {
		t.Fatalf("the second page: %+v", page)
	}
	var e contract.ErrorBody
	if resp := ts.do(t, "bob", "GET", "/v1/jobs?limit=many", nil, &e); resp.StatusCode != 400 || !strings.Contains(e.Error.Message, `limit="many"`) {
		t.Fatalf("a bad limit: %d %+v", resp.StatusCode, e)
	}
}
