package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sortie/controller/clouds"
	"sortie/controller/store"
	"sortie/provision/node"
	"sortie/schema"
)

// The sync program's exit codes the controller tells apart (cmd/sortie-sync).
const (
	syncExitDenied  = 3
	syncExitMissing = 4
)

// storageSpec is the node's buckets as the sync program reads them
// (bucket.Spec), the FUSE programs its MOUNT buckets need, and the env the
// sync program gets on cloud, as the registry says (Cloud.StorageEnv): on
// this machine, the controller's own credential chain; on a VM, where to
// find the store and the instance's role, or none (its service account).
func (c *Controller) storageSpec(task *schema.Task, cloud, region string) (spec []byte, fuse [][]string, env map[string]string, err error) {
	mounts, probs := task.Buckets("", clouds.Schema())
	if len(probs) > 0 {
		return nil, nil, nil, &schema.ValidationError{Problems: probs}
	}
	if len(mounts) == 0 {
		return nil, nil, nil, nil
	}
	type specMount struct {
		Path   string `json:"path"`
		Store  string `json:"store"`
		Bucket string `json:"bucket"`
		Prefix string `json:"prefix,omitempty"`
		Mode   string `json:"mode"`
	}
	s := struct {
		IntervalMs int64       `json:"interval_ms"`
		Mounts     []specMount `json:"mounts"`
	}{IntervalMs: c.Config.Storage.SyncInterval.D().Milliseconds()}
	for _, m := range mounts {
		s.Mounts = append(s.Mounts, specMount{Path: m.Path, Store: m.Store, Bucket: m.Bucket, Prefix: m.Prefix, Mode: m.Mode})
		if m.Mode == schema.ModeMount {
			if m.Store == schema.StoreGCS {
				fuse = append(fuse, []string{"gcsfuse"})
			} else {
				fuse = append(fuse, []string{"mount-s3", "mountpoint-s3"})
			}
		}
	}
	spec, err = json.Marshal(s)
	if err != nil {
		return nil, nil, nil, err
	}
	if f := clouds.Lookup(cloud).StorageEnv; f != nil {
		env = f(c.Config, os.Getenv, region)
	}
	return spec, fuse, env, nil
}

// prepareBuckets makes each storage mount's bucket when it is missing and
// uploads its local source, content-addressed (a bucket that holds it
// already moves nothing), before the task's nodes start. problem, when
// set, is why no retry can help (the bucket cannot be read, a URL's
// bucket does not exist); err is worth a retry.
//
// A new bucket of the attempt's cloud's own store (on aws S3, on gcp GCS:
// the registry's Task.Store) is made in the attempt's region.
func (c *Controller) prepareBuckets(ctx context.Context, j *store.Job, a *store.Attempt, task *schema.Task) (problem string, err error) {
	mounts, probs := task.Buckets("", clouds.Schema())
	if len(probs) > 0 {
		return (&schema.ValidationError{Problems: probs}).Error(), nil
	}
	for _, m := range mounts {
		args := []string{"ensure", "-store", m.Store, "-bucket", m.Bucket, "-prefix", m.Prefix}
		if m.Create {
			args = append(args, "-create")
			if own := clouds.Lookup(a.Cloud).Task.Store; a.Region != "" && own != "" && m.Store == own {
				args = append(args, "-region", a.Region)
			}
		}
		if m.Store == schema.StoreGCS && c.Config.GCP.Project != "" {
			// A new bucket is made in the project the gcp section names.
			args = append(args, "-project", c.Config.GCP.Project)
		}
		abs := func(src string) string {
			if !filepath.IsAbs(src) {
				src = filepath.Join(j.BaseDir, src)
			}
			return src
		}
		if m.Source != "" {
			args = append(args, "-source", abs(m.Source))
		}
		for _, src := range m.Sources {
			// Several sources: each under its base name, as SkyPilot uploads them.
			args = append(args, "-each", abs(src))
		}
		code, msg, err := node.RunSync(ctx, args...)
		switch {
		case err != nil:
			return "", fmt.Errorf("%s: %w", m.Field, err)
		case code == syncExitDenied:
			return fmt.Sprintf("%s: bucket %s cannot be read with these credentials (%s); give a bucket they may read, or credentials that may read it", m.Field, m.Bucket, msg), nil
		case code == syncExitMissing:
			return fmt.Sprintf("%s: bucket %s does not exist; give one that does, or a storage mount (name:) that sortie creates", m.Field, m.Bucket), nil
		case code != 0:
			return "", fmt.Errorf("%s: prepare bucket %s: %s", m.Field, m.Bucket, msg)
		}
	}
	return "", nil
}

// deleteBuckets deletes the job's persistent: false buckets once it has
// ended; a failure is logged (the bucket is the user's to delete then).
func (c *Controller) deleteBuckets(ctx context.Context, j *store.Job, p *schema.Pipeline) {
	if p == nil {
		return
	}
	for _, t := range p.Tasks {
		mounts, _ := t.Buckets("", clouds.Schema())
		for _, m := range mounts {
			if m.Persistent || !m.Create {
				continue
			}
			if code, msg, err := node.RunSync(ctx, "delete", "-store", m.Store, "-bucket", m.Bucket); err != nil || code != 0 {
				c.Log.Warn("delete a persistent: false bucket", "job", j.ID, "bucket", m.Bucket, "error", err, "output", msg)
				continue
			}
			c.Log.Info("bucket deleted (persistent: false)", "job", j.ID, "bucket", m.Bucket)
		}
	}
}

// recordStorage keeps what each node's bucket syncs did, as its agent
// reported it, when the report changed since the last one recorded.
func (c *jobStep) recordStorage(ctx context.Context, a *store.Attempt, sts []node.Status) {
	for rank, st := range sts {
		if st.Storage == nil {
			continue
		}
		key := fmt.Sprintf("%d/%d", a.ID, rank)
		line, _ := json.Marshal(st.Storage)
		if last, ok := c.storageSeen.Load(key); ok && last.(string) == string(line) {
			continue
		}
		syncs := make([]store.StorageSync, len(st.Storage))
		for i, m := range st.Storage {
			syncs[i] = store.StorageSync{Path: m.Path, Store: m.Store, Bucket: m.Bucket, Mode: m.Mode,
				DownloadedAt: m.DownloadedAt, DownloadedBytes: m.DownloadedBytes,
				UploadedAt: m.UploadedAt, UploadedBytes: m.UploadedBytes, UploadedTotal: m.UploadedTotal, Error: m.Error}
		}
		if err := c.Store.RecordStorage(ctx, a, rank, syncs); err != nil {
			c.Log.Warn("record the bucket syncs", "attempt", a.ID, "node", rank, "error", err)
			continue
		}
		c.storageSeen.Store(key, string(line))
	}
}
