package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sortie/controller/config"
	"sortie/provision/node"
)

// want is what a log of data keeps under limit: all of it, or the first
// half, the marker and the last half.
func want(data []byte, limit int64) string {
	if limit <= 0 || int64(len(data)) <= limit {
		return string(data)
	}
	head, tail := limit/2, limit-limit/2
	return string(data[:head]) + fmt.Sprintf("\n[sortie: %d bytes of this log dropped here: it was larger than its share of controller.log_max_bytes_per_attempt (%s), so its first %s and last %s are kept]\n",
		int64(len(data))-limit, config.ByteSize(limit), config.ByteSize(head), config.ByteSize(tail)) + string(data[int64(len(data))-tail:])
}

// Whatever sizes the chunks come in, what is kept is the whole log when it
// fits, else its first and last halves around a marker saying how much
// was dropped.
func TestCappedLogKeepsTheFirstAndLastHalves(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		size  int
		limit int64
	}{{0, 10}, {9, 10}, {10, 10}, {11, 10}, {11, 11}, {57, 10}, {1000, 7}, {1000, 0}, {5000, 333}} {
		data := make([]byte, tc.size)
		for i := range data {
			data[i] = 'a' + byte(rnd.IntN(26))
		}
		for round := 0; round < 5; round++ {
			dir := t.TempDir()
			f, err := os.Create(filepath.Join(dir, "log"))
			if err != nil {
				t.Fatal(err)
			}
			w := newCappedLog(f, tc.limit)
			for rest := data; len(rest) > 0; {
				k := min(len(rest), 1+rnd.IntN(3*int(max(tc.limit, 1))))
				if _, err := w.Write(rest[:k]); err != nil {
					t.Fatal(err)
				}
				rest = rest[k:]
			}
			if err := w.finish(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, _ := os.ReadFile(filepath.Join(dir, "log"))
			if string(got) != want(data, tc.limit) {
				t.Fatalf("size %d limit %d:\n got %q\nwant %q", tc.size, tc.limit, got, want(data, tc.limit))
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*.tail")); len(left) != 0 {
				t.Errorf("the ring file is left behind: %v", left)
			}
		}
	}
}

// seqLog serves a log chunk by chunk, as node.ReadLog reads one.
type seqLog struct {
	data []byte
	pos  int
}

func (s *seqLog) Exec(context.Context, string, io.Reader) ([]byte, error) {
	k := min(len(s.data)-s.pos, node.MaxLogChunk)
	b := s.data[s.pos : s.pos+k]
	s.pos += k
	return b, nil
}
func (s *seqLog) Dir() string  { return "/n" }
func (s *seqLog) Close() error { return nil }

// A node's log several chunks long, over its limit, is kept cut in the
// middle with the marker; the limit is shared by the attempt's nodes.
func TestKeepLogCapsALongLog(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), (3*node.MaxLogChunk+100)/16)
	limit := int64(1 << 20)
	path := filepath.Join(t.TempDir(), "node-0.log")
	if err := copyLog(context.Background(), node.AgentTask(&seqLog{data: data}), path, time.Minute, limit); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != want(data, limit) {
		t.Fatalf("kept %d bytes, want %d; marker: %v", len(got), len(want(data, limit)), strings.Contains(string(got), "dropped here"))
	}
	c := &Controller{}
	c.Config.Controller.LogMaxBytesPerAttempt = 8 << 20
	if c.logLimit(4) != 2<<20 || c.logLimit(0) != 8<<20 {
		t.Errorf("each node's share: %d of 4, %d of 0", c.logLimit(4), c.logLimit(0))
	}
	if (&Controller{}).logLimit(1) != 1<<30 {
		t.Errorf("the default limit is not 1GiB")
	}
}
