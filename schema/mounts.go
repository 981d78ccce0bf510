package schema

import (
	"slices"
	"strings"
)

// workdir reads workdir: a local directory, or {url, ref}, a git
// repository cloned on every node. ${VAR} is substituted from envs.
func (d *decoder) workdir(path string, v any, vars fillVars) (string, *GitRepo) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		dir := d.fill(path, v, vars)
		if strings.TrimSpace(dir) == "" {
			d.ps.add(path, v, "is empty; give a local directory, or remove it")
			return "", nil
		}
		return dir, nil
	case map[string]any:
		m, ok := d.mapping(path, v, []string{"url", "ref"}, nil)
		if !ok {
			return "", nil
		}
		repo := &GitRepo{
			URL: d.fill(join(path, "url"), d.str(join(path, "url"), m["url"]), vars),
			Ref: d.fill(join(path, "ref"), d.str(join(path, "ref"), m["ref"]), vars),
		}
		if strings.TrimSpace(repo.URL) == "" {
			d.ps.missing(join(path, "url"), "is missing; give the git repository's URL, e.g. url: https://github.com/org/repo.git")
			return "", nil
		}
		return "", repo
	}
	d.ps.add(path, v, "is %s; give a local directory, or {url: REPO, ref: BRANCH} for a git repository", typeName(v))
	return "", nil
}

func storageFields() []string {
	return []string{"name", "source", "store", "mode", "persistent"}
}

// ignoredStorageFields tune how SkyPilot mounts a bucket; sortie's
// mounts, when they run, use their own settings.
func ignoredStorageFields() map[string]string {
	return map[string]string{
		"mount_options":    "ignored: sortie mounts buckets with its own options",
		"config":           "ignored: sortie mounts buckets with its own options",
		"type":             "ignored: SkyPilot's internal mount type",
		"_is_sky_managed":  "ignored: SkyPilot's internal bucket flag",
		"_bucket_sub_path": "ignored: SkyPilot's internal bucket path",
		"_force_delete":    "ignored: SkyPilot's internal bucket flag",
	}
}

func storeTypes() []string   { return []string{"s3", "gcs"} }
func storageModes() []string { return []string{"COPY", "MOUNT", "MOUNT_CACHED"} }

// fileMounts reads file_mounts: each remote path takes a local path or a
// bucket URL (FileMounts), or a storage mapping (StorageMounts). ${VAR} in
// paths, URLs and storage fields is substituted from envs, as SkyPilot does
// when it reads the file.
func (d *decoder) fileMounts(path string, v any, vars fillVars) (map[string]string, map[string]StorageMount) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a mapping of remote path to local path, bucket URL or storage mount", typeName(v))
		return nil, nil
	}
	files := map[string]string{}
	var storage map[string]StorageMount
	for _, written := range sortedKeys(m) {
		p := join(path, written)
		dst := d.fill(p, written, vars)
		if strings.TrimSpace(dst) == "" {
			d.ps.missing(p, "has an empty remote path; give the path on the node")
			continue
		}
		if hasDotDot(dst) {
			d.ps.add(p, dst, "holds \"..\", which sortie does not resolve on the node; give the path on the node without \"..\" (relative paths are under the task's working directory)")
			continue
		}
		if strings.ContainsRune(dst, 0) {
			d.ps.missing(p, "holds a NUL byte, which no path can; remove it")
			continue
		}
		if _, dup := files[dst]; dup {
			d.ps.missing(p, "is the same remote path as another mount once variables are filled in; mount each path once")
			continue
		}
		if _, dup := storage[dst]; dup {
			d.ps.missing(p, "is the same remote path as another mount once variables are filled in; mount each path once")
			continue
		}
		switch src := m[written].(type) {
		case string:
			src = d.fill(p, src, vars)
			if strings.TrimSpace(src) == "" {
				d.ps.add(p, src, "is empty; give a local path, a bucket URL or a storage mount")
				continue
			}
			files[dst] = src
		case map[string]any:
			if sm, ok := d.storageMount(p, src, vars); ok {
				if storage == nil {
					storage = map[string]StorageMount{}
				}
				storage[dst] = sm
			}
		case nil:
			d.ps.missing(p, "has no source; give a local path, a bucket URL or a storage mount")
		default:
			d.ps.add(p, src, "is %s; give a local path, a bucket URL or a storage mount", typeName(src))
		}
	}
	if len(files) == 0 {
		files = nil
	}
	return files, storage
}

// storageMount reads {name, source, store, mode, persistent}. Store is
// lower-cased and mode upper-cased, as SkyPilot reads them.
func (d *decoder) storageMount(path string, v map[string]any, vars fillVars) (StorageMount, bool) {
	m, ok := d.mappingWith(path, v, storageFields(), fieldRules{ignored: ignoredStorageFields()})
	if !ok {
		return StorageMount{}, false
	}
	before := len(d.ps.list)
	var sm StorageMount
	sm.Name = d.fill(join(path, "name"), d.str(join(path, "name"), m["name"]), vars)
	switch src := m["source"].(type) {
	case []any:
		sm.Sources = d.sourceList(join(path, "source"), src, vars)
	default:
		sm.Source = d.fill(join(path, "source"), d.str(join(path, "source"), src), vars)
	}
	if sm.Name == "" && sm.Source == "" && len(sm.Sources) == 0 {
		// name: ${BUCKET} with envs.BUCKET "" is a name left for --env.
		name, _ := m["name"].(string)
		source, _ := m["source"].(string)
		raw := name + " " + source
		if ref := varRef().FindStringSubmatch(raw); ref != nil {
			d.ps.missing(path, "has neither name nor source: %s is empty; pass --env %s=VALUE (or --env-file FILE), or give the bucket's name", ref[0], ref[1])
		} else {
			d.ps.missing(path, "has neither name nor source; give the bucket's name, a source to upload, or both")
		}
	}
	// SkyPilot fills envs into every string of a storage mount.
	if s := d.fill(join(path, "store"), d.str(join(path, "store"), m["store"]), vars); s != "" {
		store := strings.ToLower(strings.TrimSpace(s))
		if slices.Contains(storeTypes(), store) {
			sm.Store = store
		} else {
			d.ps.add(join(path, "store"), s, "is not a store sortie supports; use s3 or gcs")
		}
	}
	if s := d.fill(join(path, "mode"), d.str(join(path, "mode"), m["mode"]), vars); s != "" {
		mode := strings.ToUpper(strings.TrimSpace(s))
		if slices.Contains(storageModes(), mode) {
			sm.Mode = mode
		} else {
			d.ps.add(join(path, "mode"), s, "is not a storage mode; use COPY, MOUNT or MOUNT_CACHED")
		}
	}
	if v, present := m["persistent"]; present && v != nil {
		b := d.boolean(join(path, "persistent"), v)
		sm.Persistent = &b
	}
	return sm, len(d.ps.list) == before
}

// hasDotDot says whether a remote path has a ".." element.
func hasDotDot(p string) bool { return slices.Contains(strings.Split(p, "/"), "..") }

// sourceList reads source given as a list: local paths, each uploaded
// into the bucket under its base name (a file as bucket/NAME, a directory
// as bucket/NAME/...), as SkyPilot uploads several sources. Two with one
// base name would write over each other, and a bucket URL cannot be one
// of several sources: both are refused.
func (d *decoder) sourceList(path string, items []any, vars fillVars) []string {
	if len(items) == 0 {
		d.ps.add(path, items, "is an empty list; give one or more local paths to upload, or leave source out")
		return nil
	}
	var out []string
	names := map[string]string{}
	for i, item := range items {
		p := index(path, i)
		s, ok := item.(string)
		if !ok {
			d.ps.add(p, item, "is %s; give a local path", typeName(item))
			continue
		}
		s = d.fill(p, s, vars)
		switch base := sourceBase(s); {
		case strings.TrimSpace(s) == "":
			d.ps.add(p, s, "is empty; give a local path")
			continue
		case isURL(s):
			d.ps.add(p, s, "is a bucket URL; several sources are local paths uploaded into one bucket, so give the URL as the mount's only source")
			continue
		case base == "" || base == "." || base == ".." || base == "~":
			d.ps.add(p, s, "has no base name to upload it under; name the file or directory itself")
			continue
		case names[base] != "":
			d.ps.add(p, s, "has the base name %s, as %s does; each source is uploaded under its base name, so they would overwrite each other", base, names[base])
			continue
		default:
			names[base] = s
		}
		out = append(out, s)
	}
	return out
}

// sourceBase is the name a source of a list is uploaded under: its last
// path element.
func sourceBase(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), "/")
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	return s
}
