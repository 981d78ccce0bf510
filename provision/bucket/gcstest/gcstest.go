// Package gcstest is a Cloud Storage stand-in for tests: an HTTP server on
// 127.0.0.1 speaking the subset of the JSON API (and the XML API's object
// reads) that cloud.google.com/go/storage uses to make, find and delete
// buckets and to list, upload (single request and resumable) and download
// objects. A program finds it as it would find any emulator, through
// STORAGE_EMULATOR_HOST, so a sync program run by a test's node reaches
// the test's own server.
//
// It keeps objects in memory, checks the CRC32C a client sends, answers
// the sizes, MD5 and CRC32C hashes and generations the real service does,
// and can refuse a bucket (403) as another project's would be.
package gcstest

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a running stand-in.
type Server struct {
	// URL is http://127.0.0.1:PORT; Host is 127.0.0.1:PORT, what
	// STORAGE_EMULATOR_HOST takes.
	URL, Host string

	srv *httptest.Server

	mu      sync.Mutex
	buckets map[string]*bucket
	uploads map[string]*upload
	denied  map[string]bool
	// deniedProjects may not have their buckets listed.
	deniedProjects map[string]bool
	gen            int64
	calls          map[string]int
	// pageSize bounds a listing's page; 0 is 1000, as the service's.
	pageSize int
}

type bucket struct {
	project string
	// location is where the bucket lives, as Cloud Storage spells it
	// ("US", "US-CENTRAL1"): the multi-region US unless the insert names one.
	location string
	created  time.Time
	objects  map[string]*object
}

type object struct {
	data    []byte
	gen     int64
	updated time.Time
	ctype   string
}

type upload struct {
	bucket, name, ctype string
	data                []byte
}

// Start starts a stand-in on 127.0.0.1; the test's cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{buckets: map[string]*bucket{}, uploads: map[string]*upload{}, denied: map[string]bool{}, deniedProjects: map[string]bool{}, calls: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	s.Host = strings.TrimPrefix(s.srv.URL, "http://")
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

// SetPageSize bounds each page of an object listing (0: 1000).
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

// Buckets lists the buckets' names, sorted.
func (s *Server) Buckets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.buckets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// BucketProject says which project a bucket was made in; "" when it was
// not made through the API.
func (s *Server) BucketProject(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.buckets[name]; b != nil {
		return b.project
	}
	return ""
}

// BucketLocation says where a bucket was made ("" for the default, the
// multi-region US).
func (s *Server) BucketLocation(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.buckets[name]; b != nil {
		return b.location
	}
	return ""
}

// Object returns an object's bytes.
func (s *Server) Object(bname, name string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[bname]
	if b == nil || b.objects[name] == nil {
		return nil, false
	}
	return bytes.Clone(b.objects[name].data), true
}

// Put stores an object as a write by someone else would.
func (s *Server) Put(bname, name string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[bname]
	if b == nil {
		b = &bucket{created: time.Now(), objects: map[string]*object{}}
		s.buckets[bname] = b
	}
	s.store(b, name, "application/octet-stream", bytes.Clone(data))
}

// store keeps data as name's next generation; s.mu is held.
func (s *Server) store(b *bucket, name, ctype string, data []byte) *object {
	s.gen++
	o := &object{data: data, gen: s.gen, updated: time.Now().UTC(), ctype: ctype}
	b.objects[name] = o
	return o
}

var (
	bucketPath  = regexp.MustCompile(`^/storage/v1/b/([^/]+)$`)
	objectsPath = regexp.MustCompile(`^/storage/v1/b/([^/]+)/o$`)
	objectPath  = regexp.MustCompile(`^/storage/v1/b/([^/]+)/o/(.+)$`)
	uploadPath  = regexp.MustCompile(`^/upload/storage/v1/b/([^/]+)/o$`)
	xmlPath     = regexp.MustCompile(`^/([^/]+)/(.+)$`)
	validBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	q := r.URL.Query()
	unescape := func(v string) string {
		u, err := url.PathUnescape(v)
		if err != nil {
			return v
		}
		return u
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var m []string
	switch {
	case p == "/storage/v1/b" && r.Method == http.MethodPost:
		s.insertBucket(w, r, q.Get("project"))
	case p == "/storage/v1/b" && r.Method == http.MethodGet:
		s.listBuckets(w, q.Get("project"))
	case match(bucketPath, p, &m):
		name := unescape(m[1])
		if !s.allowed(w, name) {
			return
		}
		switch r.Method {
		case http.MethodGet:
			s.calls["bucket.get"]++
			b := s.buckets[name]
			if b == nil {
				notFound(w, "The specified bucket does not exist.")
				return
			}
			writeJSON(w, bucketJSON(name, b))
		case http.MethodDelete:
			s.calls["bucket.delete"]++
			b := s.buckets[name]
			switch {
			case b == nil:
				notFound(w, "The specified bucket does not exist.")
			case len(b.objects) > 0:
				apiError(w, http.StatusConflict, "conflict", "The bucket you tried to delete is not empty.")
			default:
				delete(s.buckets, name)
				w.WriteHeader(http.StatusNoContent)
			}
		default:
			apiError(w, http.StatusMethodNotAllowed, "invalid", r.Method+" is not served on a bucket")
		}
	case match(objectsPath, p, &m) && r.Method == http.MethodGet:
		name := unescape(m[1])
		if !s.allowed(w, name) {
			return
		}
		s.listObjects(w, name, q)
	case match(objectPath, p, &m):
		bname, oname := unescape(m[1]), unescape(m[2])
		if !s.allowed(w, bname) {
			return
		}
		s.objectOp(w, r, bname, oname)
	case match(uploadPath, p, &m) && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		name := unescape(m[1])
		if !s.allowed(w, name) {
			return
		}
		s.upload(w, r, name)
	case match(xmlPath, p, &m) && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		bname, oname := unescape(m[1]), unescape(m[2])
		if !s.allowed(w, bname) {
			return
		}
		b := s.buckets[bname]
		if b == nil || b.objects[oname] == nil {
			http.Error(w, "NoSuchKey", http.StatusNotFound)
			return
		}
		s.media(w, r, b.objects[oname])
	default:
		apiError(w, http.StatusNotFound, "notFound", fmt.Sprintf("%s %s is not served by this stand-in", r.Method, p))
	}
}

func match(re *regexp.Regexp, p string, m *[]string) bool {
	*m = re.FindStringSubmatch(p)
	return *m != nil
}

func (s *Server) allowed(w http.ResponseWriter, bname string) bool {
	if s.denied[bname] {
		apiError(w, http.StatusForbidden, "forbidden", "caller does not have storage.objects.list access to the Google Cloud Storage bucket "+bname+". Permission 'storage.objects.list' denied on resource (or it may not exist).")
		return false
	}
	return true
}

func (s *Server) insertBucket(w http.ResponseWriter, r *http.Request, project string) {
	s.calls["bucket.insert"]++
	var in struct {
		Name     string `json:"name"`
		Location string `json:"location"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		apiError(w, http.StatusBadRequest, "parseError", "the body is not a bucket: "+err.Error())
		return
	}
	switch {
	case project == "":
		apiError(w, http.StatusBadRequest, "required", "Required parameter: project")
	case s.denied[in.Name]:
		apiError(w, http.StatusConflict, "conflict", "The requested bucket name is not available.")
	case !validBucket.MatchString(in.Name):
		apiError(w, http.StatusBadRequest, "invalid", "Invalid bucket name: '"+in.Name+"'")
	case s.buckets[in.Name] != nil:
		apiError(w, http.StatusConflict, "conflict", "Your previous request to create the named bucket succeeded and you already own it.")
	default:
		b := &bucket{project: project, location: strings.ToUpper(in.Location), created: time.Now().UTC(), objects: map[string]*object{}}
		s.buckets[in.Name] = b
		writeJSON(w, bucketJSON(in.Name, b))
	}
}

func (s *Server) listBuckets(w http.ResponseWriter, project string) {
	s.calls["bucket.list"]++
	if project == "" {
		apiError(w, http.StatusBadRequest, "required", "Required parameter: project")
		return
	}
	if s.deniedProjects[project] {
		apiError(w, http.StatusForbidden, "forbidden", "caller does not have storage.buckets.list access to the Google Cloud project "+project+".")
		return
	}
	items := []any{}
	for _, n := range sortedKeys(s.buckets) {
		if b := s.buckets[n]; b.project == project && !s.denied[n] {
			items = append(items, bucketJSON(n, b))
		}
	}
	writeJSON(w, map[string]any{"kind": "storage#buckets", "items": items})
}

func (s *Server) listObjects(w http.ResponseWriter, name string, q url.Values) {
	s.calls["object.list"]++
	b := s.buckets[name]
	if b == nil {
		notFound(w, "The specified bucket does not exist.")
		return
	}
	size := 1000
	if s.pageSize > 0 {
		size = s.pageSize
	}
	if n, err := strconv.Atoi(q.Get("maxResults")); err == nil && n > 0 && n < size {
		size = n
	}
	prefix, token := q.Get("prefix"), q.Get("pageToken")
	items := []any{}
	next := ""
	for _, k := range sortedKeys(b.objects) {
		if !strings.HasPrefix(k, prefix) || (token != "" && k < token) {
			continue
		}
		if len(items) == size {
			next = k
			break
		}
		items = append(items, objectJSON(name, k, b.objects[k]))
	}
	out := map[string]any{"kind": "storage#objects", "items": items}
	if next != "" {
		out["nextPageToken"] = next
	}
	writeJSON(w, out)
}

func (s *Server) objectOp(w http.ResponseWriter, r *http.Request, bname, oname string) {
	b := s.buckets[bname]
	if b == nil {
		notFound(w, "The specified bucket does not exist.")
		return
	}
	o := b.objects[oname]
	if o == nil {
		notFound(w, "No such object: "+bname+"/"+oname)
		return
	}
	switch r.Method {
	case http.MethodGet:
		if r.URL.Query().Get("alt") == "media" {
			s.media(w, r, o)
			return
		}
		s.calls["object.get"]++
		writeJSON(w, objectJSON(bname, oname, o))
	case http.MethodDelete:
		s.calls["object.delete"]++
		delete(b.objects, oname)
		w.WriteHeader(http.StatusNoContent)
	default:
		apiError(w, http.StatusMethodNotAllowed, "invalid", r.Method+" is not served on an object")
	}
}

// media answers an object's bytes, or the range asked (bytes=N- or
// bytes=N-M), with the headers the client reads.
func (s *Server) media(w http.ResponseWriter, r *http.Request, o *object) {
	s.calls["object.media"]++
	h := w.Header()
	h.Set("Content-Type", o.ctype)
	h.Set("X-Goog-Generation", strconv.FormatInt(o.gen, 10))
	h.Set("X-Goog-Metageneration", "1")
	h.Set("X-Goog-Hash", "crc32c="+crc32cOf(o.data)+",md5="+md5Of(o.data))
	h.Set("Last-Modified", o.updated.Format(http.TimeFormat))
	data, status := o.data, http.StatusOK
	if rg := r.Header.Get("Range"); strings.HasPrefix(rg, "bytes=") {
		from, to, _ := strings.Cut(strings.TrimPrefix(rg, "bytes="), "-")
		start, err1 := strconv.ParseInt(from, 10, 64)
		end := int64(len(o.data)) - 1
		var err2 error
		if to != "" {
			end, err2 = strconv.ParseInt(to, 10, 64)
		}
		if err1 != nil || err2 != nil || start < 0 || start > end || start >= int64(len(o.data)) {
			http.Error(w, "InvalidRange", http.StatusRequestedRangeNotSatisfiable)
			return
		}
		end = min(end, int64(len(o.data))-1)
		data, status = o.data[start:end+1], http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, len(o.data)))
	}
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(data)
	}
}

// upload serves objects.insert: uploadType=multipart (metadata and bytes
// in one multipart/related body), uploadType=media, and resumable
// sessions: a POST with the metadata returns the session's URL in
// Location, and each chunk then POSTed or PUT there with its
// Content-Range is kept until the last one (whose range gives the total).
func (s *Server) upload(w http.ResponseWriter, r *http.Request, bname string) {
	q := r.URL.Query()
	b := s.buckets[bname]
	if b == nil {
		notFound(w, "The specified bucket does not exist.")
		return
	}
	if id := q.Get("upload_id"); id != "" {
		s.chunk(w, r, b, bname, id)
		return
	}
	switch q.Get("uploadType") {
	case "multipart":
		s.calls["upload.multipart"]++
		meta, data, err := readMultipart(r)
		if err != nil {
			apiError(w, http.StatusBadRequest, "invalid", err.Error())
			return
		}
		name, ok := objectName(w, q, meta)
		if !ok {
			return
		}
		if meta.MD5Hash != "" && meta.MD5Hash != md5Of(data) {
			apiError(w, http.StatusBadRequest, "invalid", "Provided MD5 hash \""+meta.MD5Hash+"\" doesn't match calculated MD5 hash \""+md5Of(data)+"\".")
			return
		}
		if meta.CRC32C != "" && meta.CRC32C != crc32cOf(data) {
			apiError(w, http.StatusBadRequest, "invalid", "Provided CRC32C \""+meta.CRC32C+"\" doesn't match calculated CRC32C \""+crc32cOf(data)+"\".")
			return
		}
		o := s.store(b, name, meta.ContentType, data)
		writeJSON(w, objectJSON(bname, name, o))
	case "media":
		s.calls["upload.multipart"]++
		name := q.Get("name")
		data, err := io.ReadAll(r.Body)
		if err != nil || name == "" {
			apiError(w, http.StatusBadRequest, "invalid", "a media upload needs a name and a body")
			return
		}
		o := s.store(b, name, r.Header.Get("Content-Type"), data)
		writeJSON(w, objectJSON(bname, name, o))
	case "resumable":
		s.calls["upload.resumable"]++
		var meta objectMeta
		if body, _ := io.ReadAll(r.Body); len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &meta); err != nil {
				apiError(w, http.StatusBadRequest, "parseError", "the body is not an object: "+err.Error())
				return
			}
		}
		name, ok := objectName(w, q, meta)
		if !ok {
			return
		}
		ctype := r.Header.Get("X-Upload-Content-Type")
		if ctype == "" {
			ctype = meta.ContentType
		}
		s.gen++
		id := "u" + strconv.FormatInt(s.gen, 10)
		s.uploads[id] = &upload{bucket: bname, name: name, ctype: ctype}
		w.Header().Set("Location", fmt.Sprintf("%s/upload/storage/v1/b/%s/o?uploadType=resumable&name=%s&upload_id=%s",
			s.URL, url.PathEscape(bname), url.QueryEscape(name), id))
		w.WriteHeader(http.StatusOK)
	default:
		apiError(w, http.StatusBadRequest, "invalid", "uploadType "+q.Get("uploadType")+" is not served by this stand-in")
	}
}

// objectName is an upload's object: the name parameter, else the
// metadata's; with neither, the request is answered 400.
func objectName(w http.ResponseWriter, q url.Values, meta objectMeta) (string, bool) {
	name := q.Get("name")
	if name == "" {
		name = meta.Name
	}
	if name == "" {
		apiError(w, http.StatusBadRequest, "required", "Required: object name")
		return "", false
	}
	return name, true
}

var contentRange = regexp.MustCompile(`^bytes (?:(\d+)-(\d+)|\*)/(\d+|\*)$`)

func (s *Server) chunk(w http.ResponseWriter, r *http.Request, b *bucket, bname, id string) {
	s.calls["upload.chunk"]++
	u := s.uploads[id]
	if u == nil || u.bucket != bname {
		notFound(w, "No such upload session: "+id)
		return
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		apiError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	m := contentRange.FindStringSubmatch(r.Header.Get("Content-Range"))
	if m == nil {
		apiError(w, http.StatusBadRequest, "invalid", "bad Content-Range "+strconv.Quote(r.Header.Get("Content-Range")))
		return
	}
	if m[1] != "" {
		from, _ := strconv.Atoi(m[1])
		to, _ := strconv.Atoi(m[2])
		if from != len(u.data) || to-from+1 != len(data) {
			apiError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("chunk %d-%d does not follow the %d bytes received", from, to, len(u.data)))
			return
		}
		u.data = append(u.data, data...)
	}
	if m[3] == "*" {
		// More to come: 308 Resume Incomplete, or its stand-in header when
		// the client asked for no 308.
		if len(u.data) > 0 {
			w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", len(u.data)-1))
		}
		if r.Header.Get("X-GUploader-No-308") == "yes" {
			w.Header().Set("X-Http-Status-Code-Override", "308")
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusPermanentRedirect)
		return
	}
	if total, _ := strconv.Atoi(m[3]); total != len(u.data) {
		apiError(w, http.StatusBadRequest, "invalid", fmt.Sprintf("the upload says %d bytes in all and sent %d", total, len(u.data)))
		return
	}
	for _, part := range strings.Split(r.Header.Get("X-Goog-Hash"), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "crc32c="); ok && v != crc32cOf(u.data) {
			apiError(w, http.StatusBadRequest, "invalid", "Provided CRC32C \""+v+"\" doesn't match calculated CRC32C \""+crc32cOf(u.data)+"\".")
			return
		}
	}
	delete(s.uploads, id)
	o := s.store(b, u.name, u.ctype, u.data)
	writeJSON(w, objectJSON(bname, u.name, o))
}

type objectMeta struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	CRC32C      string `json:"crc32c"`
	MD5Hash     string `json:"md5Hash"`
}

// readMultipart reads a multipart/related upload: the metadata's JSON,
// then the bytes.
func readMultipart(r *http.Request) (objectMeta, []byte, error) {
	var meta objectMeta
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") {
		return meta, nil, fmt.Errorf("a multipart upload's Content-Type is multipart/related, not %q", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	part, err := mr.NextPart()
	if err != nil {
		return meta, nil, fmt.Errorf("read the metadata part: %w", err)
	}
	if err := json.NewDecoder(part).Decode(&meta); err != nil {
		return meta, nil, fmt.Errorf("the metadata part is not an object: %w", err)
	}
	part, err = mr.NextPart()
	if err != nil {
		return meta, nil, fmt.Errorf("read the media part: %w", err)
	}
	data, err := io.ReadAll(part)
	if err != nil {
		return meta, nil, err
	}
	if meta.ContentType == "" {
		meta.ContentType = part.Header.Get("Content-Type")
	}
	return meta, data, nil
}

func bucketJSON(name string, b *bucket) map[string]any {
	t := b.created.Format(time.RFC3339Nano)
	location, kind := b.location, "region"
	if location == "" {
		location = "US"
	}
	if !strings.Contains(location, "-") {
		kind = "multi-region" // US, EU, ASIA
	}
	return map[string]any{
		"kind": "storage#bucket", "id": name, "name": name, "projectNumber": "123456789",
		"location": location, "locationType": kind, "storageClass": "STANDARD",
		"metageneration": "1", "etag": "CAE=", "timeCreated": t, "updated": t,
	}
}

func objectJSON(bname, name string, o *object) map[string]any {
	g := strconv.FormatInt(o.gen, 10)
	t := o.updated.Format(time.RFC3339Nano)
	return map[string]any{
		"kind": "storage#object", "id": bname + "/" + name + "/" + g, "name": name, "bucket": bname,
		"generation": g, "metageneration": "1", "contentType": o.ctype, "storageClass": "STANDARD",
		"size": strconv.Itoa(len(o.data)), "md5Hash": md5Of(o.data), "crc32c": crc32cOf(o.data),
		"etag": "CN" + g + "EAE=", "timeCreated": t, "updated": t, "timeStorageClassUpdated": t,
	}
}

func md5Of(b []byte) string {
	h := md5.Sum(b)
	return base64.StdEncoding.EncodeToString(h[:])
}

func crc32cOf(b []byte) string {
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	return base64.StdEncoding.EncodeToString(out[:])
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, msg string) { apiError(w, http.StatusNotFound, "notFound", msg) }

// apiError answers as the JSON API does, which the client turns into a
// googleapi.Error with the code.
func apiError(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg,
		"errors": []any{map[string]any{"domain": "global", "reason": reason, "message": msg}},
	}})
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
