// Package gcstest is a Cloud Storage stand-in for tests: fake-gcs-server
// on 127.0.0.1, behind a handler that counts the requests, remembers the
// project and location each bucket was made in, and can refuse a bucket
// (403) as another project's would be. A program finds it as it would find
// any emulator, through STORAGE_EMULATOR_HOST, so a sync program run by a
// test's node reaches the test's own server.
package gcstest

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Server is a running stand-in.
type Server struct {
	// URL is http://127.0.0.1:PORT; Host is 127.0.0.1:PORT, what
	// STORAGE_EMULATOR_HOST takes.
	URL, Host string

	fake *fakestorage.Server

	mu     sync.Mutex
	denied map[string]bool
	// deniedProjects may not have their buckets listed.
	deniedProjects map[string]bool
	// projects and locations are where each bucket was made, as the
	// insert said.
	projects, locations map[string]string
	calls               map[string]int
	// pageSize bounds a listing's page; 0 is the service's own.
	pageSize int
}

// Start starts a stand-in on 127.0.0.1; the test's cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := l.Addr().String()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", ExternalURL: "http://" + host, PublicHost: host,
		BucketsLocation: "US", Writer: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + host, Host: host, fake: fake, denied: map[string]bool{}, deniedProjects: map[string]bool{},
		projects: map[string]string{}, locations: map[string]string{}, calls: map[string]int{}}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve)}}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(fake.Stop)
	return s
}

// Deny makes every request about bucket answer 403, as a bucket of
// another project whose IAM policy leaves the caller out.
func (s *Server) Deny(bname string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[bname] = true
}

// DenyProject makes a listing of project's buckets answer 403, as for
// credentials without storage.buckets.list there.
func (s *Server) DenyProject(project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deniedProjects[project] = true
}

// SetPageSize bounds each page of an object listing (0: the service's).
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// Calls says how many requests of a kind were answered: "bucket.insert",
// "bucket.get", "bucket.delete", "bucket.list", "object.list",
// "object.get" (metadata), "object.media" (bytes, JSON or XML),
// "object.delete", "upload.multipart", "upload.resumable" (a session
// started), "upload.chunk".
func (s *Server) Calls(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[kind]
}

// BucketProject says which project a bucket was made in; "" when it was
// not made through the API.
func (s *Server) BucketProject(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.projects[name]
}

// BucketLocation says where a bucket was made ("" for the default, the
// multi-region US).
func (s *Server) BucketLocation(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locations[name]
}

// Object returns an object's bytes.
func (s *Server) Object(bname, name string) ([]byte, bool) {
	o, err := s.fake.GetObject(bname, name)
	return o.Content, err == nil
}

// Put stores an object as a write by someone else would, making its
// bucket if there is none.
func (s *Server) Put(bname, name string, data []byte) {
	s.fake.CreateObject(fakestorage.Object{Content: bytes.Clone(data), ObjectAttrs: fakestorage.ObjectAttrs{
		BucketName: bname, Name: name, ContentType: "application/octet-stream"}})
}

// PutAt is Put with the object's last-modified time.
func (s *Server) PutAt(bname, name string, data []byte, updated time.Time) {
	s.fake.CreateObject(fakestorage.Object{Content: bytes.Clone(data), ObjectAttrs: fakestorage.ObjectAttrs{
		BucketName: bname, Name: name, ContentType: "application/octet-stream", Created: updated, Updated: updated}})
}

var (
	bucketPath = regexp.MustCompile(`^/storage/v1/b/([^/]+)(/o)?(/.+)?$`)
	uploadPath = regexp.MustCompile(`^/upload/storage/v1/b/([^/]+)/o$`)
	xmlPath    = regexp.MustCompile(`^/([^/]+)/.+$`)
)

// serve counts the request and answers the parts fake-gcs-server does not
// keep (projects, locations, refusals, the page size) before handing it on.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p, q := r.URL.EscapedPath(), r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	var kind, bname string
	var edit func(map[string]any)
	if m := bucketPath.FindStringSubmatch(p); m != nil {
		bname, _ = url.PathUnescape(m[1])
		switch {
		case m[2] == "" && r.Method == http.MethodGet:
			kind, edit = "bucket.get", s.locate
		case m[2] == "":
			kind = "bucket." + strings.ToLower(r.Method)
		case m[3] == "" && r.Method == http.MethodGet:
			kind = "object.list"
			if s.pageSize > 0 {
				if n, err := strconv.Atoi(q.Get("maxResults")); err != nil || n <= 0 || n > s.pageSize {
					q.Set("maxResults", strconv.Itoa(s.pageSize))
					r.URL.RawQuery = q.Encode()
				}
			}
		case q.Get("alt") == "media":
			kind = "object.media"
		default:
			kind = "object." + strings.ToLower(r.Method)
		}
	} else if m := uploadPath.FindStringSubmatch(p); m != nil {
		bname, _ = url.PathUnescape(m[1])
		switch {
		case q.Get("upload_id") != "":
			kind = "upload.chunk"
		case q.Get("uploadType") == "resumable":
			kind = "upload.resumable"
		default:
			kind = "upload.multipart"
		}
	} else if p == "/storage/v1/b" && r.Method == http.MethodPost {
		kind = "bucket.insert"
		if !s.insert(w, r, q.Get("project")) {
			s.calls[kind]++
			return
		}
	} else if p == "/storage/v1/b" && r.Method == http.MethodGet {
		kind = "bucket.list"
		project := q.Get("project")
		if s.deniedProjects[project] {
			s.calls[kind]++
			apiError(w, http.StatusForbidden, "caller does not have storage.buckets.list access to the Google Cloud project "+project+".")
			return
		}
		edit = func(out map[string]any) {
			items := []any{}
			for _, it := range asList(out["items"]) {
				b, _ := it.(map[string]any)
				if n, _ := b["name"].(string); s.projects[n] == project && !s.denied[n] {
					s.locate(b)
					items = append(items, b)
				}
			}
			out["items"] = items
		}
	} else if m := xmlPath.FindStringSubmatch(p); m != nil {
		bname, _ = url.PathUnescape(m[1])
		kind = "object.media"
	}
	s.calls[kind]++
	if s.denied[bname] {
		apiError(w, http.StatusForbidden, "caller does not have storage.objects.list access to the Google Cloud Storage bucket "+bname+". Permission 'storage.objects.list' denied on resource (or it may not exist).")
		return
	}
	if edit == nil {
		s.fake.HTTPHandler().ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	s.fake.HTTPHandler().ServeHTTP(rec, r)
	var out map[string]any
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
		return
	}
	edit(out)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(out)
}

// insert keeps a bucket insert's project and location, or answers it
// itself when the service would refuse it; it says whether to hand the
// request on.
func (s *Server) insert(w http.ResponseWriter, r *http.Request, project string) bool {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var in struct{ Name, Location string }
	json.Unmarshal(body, &in)
	switch {
	case project == "":
		apiError(w, http.StatusBadRequest, "Required parameter: project")
	case s.denied[in.Name]:
		apiError(w, http.StatusConflict, "The requested bucket name is not available.")
	default:
		if _, err := s.fake.Backend().GetBucket(in.Name); err != nil {
			s.projects[in.Name], s.locations[in.Name] = project, strings.ToUpper(in.Location)
		}
		return true
	}
	return false
}

// locate writes a bucket's own location into its JSON.
func (s *Server) locate(b map[string]any) {
	n, _ := b["name"].(string)
	if loc := s.locations[n]; loc != "" {
		b["location"], b["locationType"] = loc, "region"
		if !strings.Contains(loc, "-") {
			b["locationType"] = "multi-region" // US, EU, ASIA
		}
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// apiError answers as the JSON API does, which the client turns into a
// googleapi.Error with the code.
func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}
