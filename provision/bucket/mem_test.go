package bucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// memStore is an in-memory Store that counts what it was asked.
type memStore struct {
	mu      sync.Mutex
	buckets map[string]map[string][]byte
	gets    int
	puts    int
}

func newMem(buckets ...string) *memStore {
	m := &memStore{buckets: map[string]map[string][]byte{}}
	for _, b := range buckets {
		m.buckets[b] = map[string][]byte{}
	}
	return m
}

func etag(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }

func (m *memStore) List(_ context.Context, bucket, prefix string) ([]Object, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Object
	for k, v := range m.buckets[bucket] {
		if strings.HasPrefix(k, prefix) {
			out = append(out, Object{Key: k, Size: int64(len(v)), ETag: etag(v), Modified: time.Unix(0, 0)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

func (m *memStore) Get(_ context.Context, bucket, key string, w io.WriterAt) error {
	m.mu.Lock()
	b := m.buckets[bucket][key]
	m.gets++
	m.mu.Unlock()
	_, err := w.WriteAt(b, 0)
	return err
}

func (m *memStore) Put(_ context.Context, bucket, key string, r io.Reader, _ int64) (string, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.buckets[bucket][key] = b.Bytes()
	m.puts++
	return etag(b.Bytes()), nil
}

func (m *memStore) Exists(_ context.Context, bucket string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.buckets[bucket]
	return ok, nil
}

func (m *memStore) Create(_ context.Context, bucket string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.buckets[bucket] == nil {
		m.buckets[bucket] = map[string][]byte{}
	}
	return nil
}

func (m *memStore) Delete(_ context.Context, bucket string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.buckets, bucket)
	return nil
}

func (m *memStore) counts() (gets, puts int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gets, m.puts
}
