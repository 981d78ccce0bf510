package schema

// Unresolved reports what keeps a parsed pipeline from launching although
// the file is valid: envs still without a value, and features that parse
// but do not run yet (storage mounts and bucket sources), one problem
// each. It returns nil or a *ValidationError.
func (p *Pipeline) Unresolved() error {
	ps := &problems{}
	for i, t := range p.Tasks {
		path := ""
		if len(p.Tasks) > 1 {
			path = index("tasks", i)
		}
		for _, k := range t.RequiredEnvs {
			ps.missing(join(join(path, "envs"), k),
				"is required at launch; pass --env %s=VALUE or --env-file FILE", k)
		}
		for _, dst := range sortedKeys(t.StorageMounts) {
			ps.missing(join(join(path, "file_mounts"), dst),
				"is a storage mount; buckets are not supported yet: copy the data in setup (e.g. aws s3 sync, gcloud storage cp) or give a local path")
		}
		for _, dst := range sortedKeys(t.FileMounts) {
			if src := t.FileMounts[dst]; isURL(src) {
				ps.add(join(join(path, "file_mounts"), dst), src,
					"is a bucket; buckets are not supported yet: copy the data in setup (e.g. aws s3 sync, gcloud storage cp) or give a local path")
			}
		}
	}
	return ps.err()
}
