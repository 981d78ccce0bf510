package service

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"sortie/controller/clouds"
	"sortie/controller/config"
	"sortie/controller/contract"
	"sortie/provision/node"
	"sortie/schema"
)

// The sync program's exit codes for a bucket that cannot be read and one
// that does not exist (cmd/sortie-sync).
const (
	syncExitDenied  = 3
	syncExitMissing = 4
)

// storageSourceProblems refuses a storage mount's local source that is
// not there: it is uploaded at launch.
func storageSourceProblems(p *schema.Pipeline, i int, t *schema.Task, base string, relHint func(string) string) []schema.Problem {
	var probs []schema.Problem
	for _, dst := range sortedKeys(t.StorageMounts) {
		for _, ls := range t.StorageMounts[dst].LocalSources() {
			probs = append(probs, localSourceProblems(taskPath(p, i, "file_mounts."+dst+"."+ls.Field), ls.Path, base, relHint)...)
		}
	}
	return probs
}

// localSourceProblems says why src, a storage mount's local source at
// path, cannot be uploaded, if it cannot.
func localSourceProblems(path, src, base string, relHint func(string) string) []schema.Problem {
	abs := localPath(base, src)
	info, err := os.Stat(abs)
	switch {
	case err != nil:
		return []schema.Problem{{Path: path, Value: strconv.Quote(src),
			Message: fmt.Sprintf("cannot be read: %s%s", statReason(abs, err), relHint(src))}}
	case !info.Mode().IsRegular() && !info.IsDir():
		return []schema.Problem{{Path: path, Value: strconv.Quote(src),
			Message: fmt.Sprintf("%s is %s; sortie uploads regular files and directories only", abs, schema.FileKind(info.Mode()))}}
	}
	return nil
}

// bucketProblems asks each store, through the sync program and with the
// credentials of whoever launches, whether the task's buckets can be read:
// a bucket another account owns, or a URL whose bucket does not exist, is
// refused at launch, before anything is provisioned. A storage mount's
// missing bucket is fine: the controller creates it. A check that fails
// otherwise, of a store whose cloud is not enabled here (notEnabled says
// why, or nil), is refused as that cloud is, not with the store's error.
func bucketProblems(ctx context.Context, p *schema.Pipeline, notEnabled func(store string) error) ([]schema.Problem, error) {
	var probs []schema.Problem
	for i, t := range p.Tasks {
		prefix := ""
		if len(p.Tasks) > 1 {
			prefix = fmt.Sprintf("tasks[%d]", i)
		}
		mounts, _ := t.Buckets(prefix, clouds.Schema())
		for _, m := range mounts {
			args := []string{"check", "-store", m.Store, "-bucket", m.Bucket}
			if m.Create {
				args = append(args, "-create")
			}
			code, msg, err := node.RunSync(ctx, args...)
			if err != nil {
				return nil, fmt.Errorf("%s: check bucket %s: %w", m.Field, m.Bucket, err)
			}
			switch code {
			case 0:
			case syncExitDenied:
				probs = append(probs, schema.Problem{Path: m.Field, Value: strconv.Quote(m.Bucket),
					Message: fmt.Sprintf("cannot be read with your credentials (%s); name a bucket they may read, or use credentials that may read it", msg)})
			case syncExitMissing:
				probs = append(probs, schema.Problem{Path: m.Field, Value: strconv.Quote(m.Bucket),
					Message: "does not exist; give a bucket that does, or a storage mount ({name: ..., store: ...}), which sortie creates"})
			default:
				if why := notEnabled(m.Store); why != nil {
					probs = append(probs, schema.Problem{Path: m.Field, Value: strconv.Quote(m.Bucket),
						Message: fmt.Sprintf("is in %s, and %v", m.Store, why)})
					continue
				}
				return nil, fmt.Errorf("%s: check bucket %s: %s", m.Field, m.Bucket, msg)
			}
		}
	}
	return probs, nil
}

// bucketRegionWarnings says, for the dry run, which S3 (GCS) buckets live
// in another region than the AWS (GCP) placements the task may run in:
// allowed, but every sync then crosses regions. Where the store cannot
// tell (no credentials here, a bucket still to be created), it says
// nothing. A placement that names no region may run in any region cfg
// offers its cloud.
func bucketRegionWarnings(ctx context.Context, p *schema.Pipeline, plans []contract.TaskPlan, cfg config.Config) []string {
	var warns []string
	asked := map[string]string{} // store:bucket -> location, "" when unknown
	for i, t := range p.Tasks {
		if i >= len(plans) {
			break
		}
		prefix := ""
		if len(p.Tasks) > 1 {
			prefix = fmt.Sprintf("tasks[%d]", i)
		}
		mounts, _ := t.Buckets(prefix, clouds.Schema())
		for _, m := range mounts {
			var regions []string
			var sc clouds.Cloud
			for _, pl := range plans[i].Placements {
				c := clouds.Lookup(pl.Cloud)
				if c.Task.Store != m.Store || c.BucketNear == nil {
					continue
				}
				sc = c
				if pl.Region != nil {
					regions = appendNew(regions, *pl.Region)
				} else if c.Regions != nil {
					for _, r := range c.Regions(cfg) {
						regions = appendNew(regions, r)
					}
				}
			}
			if len(regions) == 0 {
				continue
			}
			key := m.Store + ":" + m.Bucket
			where, seen := asked[key]
			if !seen {
				if code, msg, err := node.RunSync(ctx, "region", "-store", m.Store, "-bucket", m.Bucket); err == nil && code == 0 {
					where = strings.TrimSpace(msg)
				}
				asked[key] = where
			}
			if where == "" {
				continue
			}
			var far []string
			for _, r := range regions {
				if !sc.BucketNear(where, r) {
					far = append(far, r)
				}
			}
			if len(far) == 0 {
				continue
			}
			warns = append(warns, fmt.Sprintf("%s: bucket %s is in %s, and the task may run in %s: every sync crosses regions (slower, and %s bills the transfer); a bucket in the cluster's region avoids it",
				m.Field, m.Bucket, where, strings.Join(far, ", "), sc.BucketBills))
		}
	}
	return warns
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
