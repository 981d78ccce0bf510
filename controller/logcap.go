package controller

import (
	"fmt"
	"io"
	"os"

	"sortie/controller/config"
	"sortie/controller/home"
)

// cappedLog writes a kept log of at most limit bytes (0: no limit) as it
// arrives, chunk by chunk, without knowing its length: the first half goes
// to the file at once, the rest to a ring of the last half in a file
// beside it. At the end, past the limit, a marker line saying how many
// bytes were dropped joins the first half and the last. Disk use is bounded
// by the limit and memory by a chunk.
type cappedLog struct {
	f          *os.File
	limit      int64
	head, tail int64 // the sizes of the kept first and last parts
	written    int64 // bytes written to the head
	ringPath   string
	ring       *os.File
	ringN      int64 // bytes written to the ring, wrapped ones included
}

func newCappedLog(f *os.File, limit int64) *cappedLog {
	c := &cappedLog{f: f, limit: limit, ringPath: f.Name() + ".tail"}
	if limit > 0 {
		c.head = limit / 2
		c.tail = limit - c.head
	}
	return c
}

func (c *cappedLog) Write(b []byte) (int, error) {
	n := len(b)
	if c.limit <= 0 {
		return c.f.Write(b)
	}
	if c.written < c.head {
		k := min(int64(len(b)), c.head-c.written)
		if _, err := c.f.Write(b[:k]); err != nil {
			return 0, err
		}
		c.written += k
		b = b[k:]
	}
	if len(b) == 0 {
		return n, nil
	}
	if c.ring == nil {
		r, err := os.OpenFile(c.ringPath, os.O_CREATE|os.O_RDWR|os.O_TRUNC, home.FileMode)
		if err != nil {
			return 0, err
		}
		c.ring = r
	}
	// Only the last tail bytes of b can survive.
	if int64(len(b)) > c.tail {
		c.ringN += int64(len(b)) - c.tail
		b = b[int64(len(b))-c.tail:]
	}
	for len(b) > 0 {
		off := c.ringN % c.tail
		k := min(int64(len(b)), c.tail-off)
		if _, err := c.ring.WriteAt(b[:k], off); err != nil {
			return 0, err
		}
		c.ringN += k
		b = b[k:]
	}
	return n, nil
}

// finish appends what the ring kept to the file, after the marker when
// bytes were dropped, and removes the ring.
func (c *cappedLog) finish() error {
	if c.ring == nil {
		return nil
	}
	defer os.Remove(c.ringPath)
	defer c.ring.Close()
	if c.ringN <= c.tail {
		_, err := io.Copy(c.f, io.NewSectionReader(c.ring, 0, c.ringN))
		return err
	}
	dropped := c.ringN - c.tail
	if _, err := fmt.Fprintf(c.f, "\n[sortie: %d bytes of this log dropped here: it was larger than its share of controller.log_max_bytes_per_attempt (%s), so its first %s and last %s are kept]\n",
		dropped, config.ByteSize(c.limit), config.ByteSize(c.head), config.ByteSize(c.tail)); err != nil {
		return err
	}
	start := c.ringN % c.tail
	if _, err := io.Copy(c.f, io.NewSectionReader(c.ring, start, c.tail-start)); err != nil {
		return err
	}
	_, err := io.Copy(c.f, io.NewSectionReader(c.ring, 0, start))
	return err
}

// logLimit is each node's share of an attempt's kept logs.
func (c *Controller) logLimit(nodes int) int64 {
	max := int64(c.Config.Controller.LogMaxBytesPerAttempt)
	if max <= 0 {
		max = int64(config.DefaultLogMaxBytes)
	}
	return max / int64(max1(nodes))
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
