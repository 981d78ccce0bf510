package schema

import (
	"cmp"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
)

// Stores sortie syncs buckets with.
const (
	StoreS3  = "s3"
	StoreGCS = "gcs"
)

// Storage modes, as SkyPilot names them.
const (
	ModeCopy        = "COPY"
	ModeMount       = "MOUNT"
	ModeMountCached = "MOUNT_CACHED"
)

// BucketMount is one bucket a task's nodes see at a path: a storage mount
// ({name, source, store, mode, persistent}) or a bucket URL given as a
// file_mounts source (copied, as SkyPilot does).
type BucketMount struct {
	// Path is the path on the node, as the file gives it (a relative one is
	// under the task's working directory).
	Path string
	// Field is the file's field, for messages: "file_mounts./ckpt".
	Field string
	// Store is s3 or gcs; Bucket the bucket's name; Prefix the objects'
	// common prefix ("" or ending in "/").
	Store, Bucket, Prefix string
	// Mode is COPY, MOUNT or MOUNT_CACHED.
	Mode string
	// Source is a local path uploaded to the bucket at launch; "" when none.
	Source string
	// Sources are the local paths of a list source, each uploaded under
	// its base name; nil unless the file gives a list.
	Sources []string
	// Persistent false deletes the bucket when the job ends.
	Persistent bool
	// Create says the bucket is created when it does not exist (a storage
	// mount's name); a bucket URL must name one that does.
	Create bool
}

// storeOfScheme maps a bucket URL's scheme to its store.
var storeOfScheme = map[string]string{"s3": StoreS3, "gs": StoreGCS}

// ParseBucketURL reads s3://BUCKET[/PREFIX] or gs://BUCKET[/PREFIX]. The
// prefix comes back ending in "/" when there is one.
func ParseBucketURL(u string) (store, bucket, prefix string, err error) {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return "", "", "", fmt.Errorf("is not a bucket URL; give s3://BUCKET/PREFIX or gs://BUCKET/PREFIX")
	}
	store, ok = storeOfScheme[strings.ToLower(scheme)]
	if !ok {
		return "", "", "", fmt.Errorf("is a URL of a store sortie does not sync (%s://); use s3:// or gs://, or copy the data in setup", scheme)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	if bucket == "" {
		return "", "", "", fmt.Errorf("names no bucket; give %s://BUCKET/PREFIX", scheme)
	}
	return store, bucket, prefix, nil
}

var (
	s3BucketName  = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	gcsBucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`)
)

// BucketNameProblem says why name is not a valid bucket name for store,
// following each store's published naming rules; "" when it is valid.
func BucketNameProblem(store, name string) string {
	switch store {
	case StoreS3:
		switch {
		case !s3BucketName.MatchString(name):
			return "is not a valid S3 bucket name: 3 to 63 lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit"
		case strings.Contains(name, ".."):
			return "is not a valid S3 bucket name: two dots in a row"
		case net.ParseIP(name) != nil:
			return "is not a valid S3 bucket name: it reads as an IP address"
		case strings.HasPrefix(name, "xn--") || strings.HasPrefix(name, "sthree-"):
			return "is not a valid S3 bucket name: S3 reserves the prefixes xn-- and sthree-"
		case strings.HasSuffix(name, "-s3alias") || strings.HasSuffix(name, "--ol-s3"):
			return "is not a valid S3 bucket name: S3 reserves the suffixes -s3alias and --ol-s3"
		}
	case StoreGCS:
		switch {
		case !gcsBucketName.MatchString(name):
			return "is not a valid GCS bucket name: 3 to 63 lowercase letters, digits, hyphens and underscores (up to 222 with dots), beginning and ending with a letter or digit"
		case net.ParseIP(name) != nil:
			return "is not a valid GCS bucket name: it reads as an IP address"
		case strings.HasPrefix(name, "goog") || strings.Contains(name, "google") || strings.Contains(name, "g00gle"):
			return "is not a valid GCS bucket name: names beginning with goog or holding google are reserved"
		case strings.Contains(name, "..") || strings.Contains(name, ".-") || strings.Contains(name, "-."):
			return "is not a valid GCS bucket name: a dot beside another dot or a hyphen"
		}
		if !strings.Contains(name, ".") && len(name) > 63 {
			return "is not a valid GCS bucket name: longer than 63 characters without dots"
		}
		for _, part := range strings.Split(name, ".") {
			if len(part) > 63 {
				return "is not a valid GCS bucket name: a dot-separated part is longer than 63 characters"
			}
		}
	}
	return ""
}

// defaultStore is the store a storage mount without store: uses on cloud,
// as SkyPilot picks the cloud's own; "" where a cloud has none.
func (cs Clouds) defaultStore(cloud string) string {
	if c, ok := cs.Lookup(cloud); ok {
		return c.Store
	}
	return ""
}

// Buckets lists the task's buckets, by path, with everything resolved, and
// the problems that keep one from launching (a missing store, a bad name
// or URL), each naming its field. prefix is the task's path in a file of
// several tasks ("tasks[1]"), "" otherwise; clouds are those the task may
// name, whose own stores a storage mount without store: takes.
func (t *Task) Buckets(prefix string, clouds Clouds) ([]BucketMount, []Problem) {
	ps := &problems{}
	var out []BucketMount
	fm := join(prefix, "file_mounts")
	for _, dst := range sortedKeys(t.FileMounts) {
		src := t.FileMounts[dst]
		if !isURL(src) {
			continue
		}
		field := join(fm, dst)
		store, bucket, pfx, err := ParseBucketURL(src)
		if err != nil {
			ps.add(field, src, "%s", err.Error())
			continue
		}
		if why := BucketNameProblem(store, bucket); why != "" {
			ps.add(field, src, "%s", why)
			continue
		}
		out = append(out, BucketMount{Path: dst, Field: field, Store: store, Bucket: bucket, Prefix: pfx, Mode: ModeCopy, Persistent: true})
	}
	for _, dst := range sortedKeys(t.StorageMounts) {
		sm := t.StorageMounts[dst]
		field := join(fm, dst)
		b := BucketMount{Path: dst, Field: field, Mode: sm.Mode, Persistent: sm.Persistent == nil || *sm.Persistent, Create: true}
		b.Mode = cmp.Or(b.Mode, ModeMount) // SkyPilot's default
		b.Store = sm.Store
		b.Bucket = sm.Name
		if isURL(sm.Source) {
			store, bucket, pfx, err := ParseBucketURL(sm.Source)
			if err != nil {
				ps.add(join(field, "source"), sm.Source, "%s", err.Error())
				continue
			}
			if b.Store != "" && b.Store != store {
				ps.add(join(field, "store"), b.Store, "is not the store of source %s; leave store out or make them agree", sm.Source)
				continue
			}
			if b.Bucket != "" && b.Bucket != bucket {
				ps.add(join(field, "name"), b.Bucket, "is not the bucket of source %s; give one or the other", sm.Source)
				continue
			}
			b.Store, b.Bucket, b.Prefix, b.Create = store, bucket, pfx, false
		} else {
			b.Source, b.Sources = sm.Source, sm.Sources
			if b.Bucket == "" {
				ps.missing(join(field, "name"), "is missing; a local source is uploaded to a bucket of this name, so give one")
				continue
			}
		}
		b.Store = cmp.Or(b.Store, clouds.defaultStore(t.Resources.Cloud))
		if b.Store == "" {
			ps.missing(join(field, "store"), "is missing; give store: s3 or store: gcs (a storage mount takes its cloud's own store only on %s)", clouds.storeNames())
			continue
		}
		if why := BucketNameProblem(b.Store, b.Bucket); why != "" {
			path := join(field, "name")
			if !b.Create {
				path = join(field, "source")
			}
			ps.add(path, b.Bucket, "%s", why)
			continue
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, ps.list
}
