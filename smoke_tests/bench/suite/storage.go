package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"sortie/provision/bucket"
	"sortie/provision/cloudtest"
)

// StorageOptions sizes the storage group: Files files of FileBytes each
// uploaded by sortie's sync and by the SDK's transfer manager, and a
// sync pass over Unchanged files that have not changed.
type StorageOptions struct {
	Home      string
	Files     int
	FileBytes int64
	Unchanged int
	Progress  io.Writer
}

// StorageResult is what the storage group measured.
type StorageResult struct {
	// Sync and TransferManager upload the same directory to moto's S3.
	Sync, TransferManager time.Duration
	SyncedFiles           int
	// Resync is one MOUNT_CACHED pass (manifest read, walk, manifest
	// written) over Unchanged files, of which ResyncMoved moved.
	Resync      time.Duration
	ResyncMoved int
}

// RunStorage starts moto's S3 and measures the uploads and the resync.
func RunStorage(ctx context.Context, o StorageOptions) (StorageResult, error) {
	var r StorageResult
	if err := os.MkdirAll(o.Home, 0o755); err != nil {
		return r, err
	}
	endpoint, stop, err := cloudtest.RunMoto(ctx, filepath.Join(o.Home, "moto.log"))
	if err != nil {
		return r, err
	}
	defer stop()
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")})
	st := bucket.NewS3Client(c)
	for _, b := range []string{"bench-tm", "bench-sync", "bench-resync"} {
		if err := st.Create(ctx, b); err != nil {
			return r, err
		}
	}
	dir := filepath.Join(o.Home, "ckpt")
	if err := makeFiles(dir, o.Files, o.FileBytes); err != nil {
		return r, err
	}
	fmt.Fprintf(o.Progress, "storage: %d files of %d bytes\n", o.Files, o.FileBytes)
	// The SDK's own transfer manager first, then sortie's sync, each
	// into a bucket of its own, the same files.
	tm := transfermanager.New(c)
	t0 := time.Now()
	if _, err := tm.UploadDirectory(ctx, &transfermanager.UploadDirectoryInput{Bucket: aws.String("bench-tm"), Source: aws.String(dir), Recursive: aws.Bool(true)}); err != nil {
		return r, fmt.Errorf("transfer manager: %w", err)
	}
	r.TransferManager = time.Since(t0)
	t0 = time.Now()
	res, err := bucket.Mount{Store: st, Bucket: "bench-sync", Dir: dir}.Up(ctx, bucket.Manifest{})
	if err != nil {
		return r, fmt.Errorf("sync: %w", err)
	}
	r.Sync, r.SyncedFiles = time.Since(t0), res.Files
	if err := os.RemoveAll(dir); err != nil {
		return r, err
	}

	// The resync: a node directory whose MOUNT_CACHED mount holds
	// Unchanged small files, uploaded once, then a timed pass.
	node := filepath.Join(o.Home, "node", "attempt-1")
	if err := makeFiles(filepath.Join(node, "ckpt"), o.Unchanged, 64); err != nil {
		return r, err
	}
	spec := `{"interval_ms":30000,"mounts":[{"path":"` + filepath.Join(node, "ckpt") + `","store":"s3","bucket":"bench-resync","mode":"MOUNT_CACHED"}]}`
	if err := os.WriteFile(filepath.Join(node, bucket.FileSpec), []byte(spec), 0o644); err != nil {
		return r, err
	}
	n := bucket.Node{Dir: node, Open: func(context.Context, string) (bucket.Store, error) { return st, nil }}
	if err := n.Up(ctx); err != nil {
		return r, fmt.Errorf("first upload of the resync files: %w", err)
	}
	t0 = time.Now()
	if err := n.Up(ctx); err != nil {
		return r, fmt.Errorf("resync: %w", err)
	}
	r.Resync = time.Since(t0)
	states, err := bucket.ReadState(node)
	if err != nil || len(states) != 1 {
		return r, fmt.Errorf("resync state %v: %v", states, err)
	}
	if states[0].UploadedBytes != 0 {
		r.ResyncMoved = 1
	}
	return r, nil
}

// makeFiles writes n files of size bytes under dir, in subdirectories of
// 1,000, each of its own content.
func makeFiles(dir string, n int, size int64) error {
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000), fmt.Sprintf("f%05d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "%d\n", i)
		left := size - int64(len(fmt.Sprintf("%d\n", i)))
		for left > 0 {
			k := min(left, int64(len(buf)))
			if _, err := f.Write(buf[:k]); err != nil {
				f.Close()
				return err
			}
			left -= k
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
