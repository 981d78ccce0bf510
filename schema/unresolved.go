package schema

// Unresolved reports what keeps a parsed pipeline from launching although
// the file is valid: envs still without a value (filled by --env), and
// buckets sortie cannot sync once envs are filled in (a storage mount
// without a store, a bucket name its store refuses, a URL of another
// store), one problem each. clouds are those the file was parsed with. It
// returns nil or a *ValidationError.
func (p *Pipeline) Unresolved(clouds Clouds) error {
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
		_, probs := t.Buckets(path, clouds)
		ps.list = append(ps.list, probs...)
	}
	return ps.err()
}
