package schema

import (
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkInputKey10kFiles keys a workdir of 10,000 small files: the cost
// is walking and opening, which the worker pool overlaps.
func BenchmarkInputKey10kFiles(b *testing.B) {
	dir := b.TempDir()
	content := make([]byte, 2048)
	for d := range 100 {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%03d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			content[0], content[1] = byte(d), byte(f)
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.py", f)), content, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	task := &Task{Workdir: ".", Run: "python main.py"}
	for b.Loop() {
		if _, err := InputKey(task, dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInputKey1GiB keys a workdir of four 256 MiB files: the cost is
// hashing, streamed and spread over the cores.
func BenchmarkInputKey1GiB(b *testing.B) {
	if testing.Short() {
		b.Skip("writes 1 GiB; skipped with -short")
	}
	const files, size = 4, 256 << 20
	dir := b.TempDir()
	chunk := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range files {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("shard%d.bin", i)))
		if err != nil {
			b.Fatal(err)
		}
		for range size / len(chunk) {
			for j := 0; j < len(chunk); j += 8 {
				v := rng.Uint64()
				for k := range 8 {
					chunk[j+k] = byte(v >> (8 * k))
				}
			}
			if _, err := f.Write(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	task := &Task{Workdir: ".", Run: "python main.py"}
	b.Run("input_key", func(b *testing.B) {
		b.SetBytes(files * size)
		for b.Loop() {
			if _, err := InputKey(task, dir); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The baseline, measured in the same run on the same files: one plain
	// SHA-256 stream over them, as sha256sum would do.
	b.Run("sha256_baseline", func(b *testing.B) {
		b.SetBytes(files * size)
		for b.Loop() {
			h := sha256.New()
			for i := range files {
				f, err := os.Open(filepath.Join(dir, fmt.Sprintf("shard%d.bin", i)))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(h, f); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
			h.Sum(nil)
		}
	})
}
