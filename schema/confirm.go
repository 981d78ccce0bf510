package schema

// MaxConfirmFailures is the most job_recovery.confirm_failures takes: one
// more run on another placement is what tells a deterministic failure from
// a flaky one.
const MaxConfirmFailures = 1

// confirmFailures reads job_recovery.confirm_failures: 0 when absent.
func (d *decoder) confirmFailures(path string, raw any) int {
	n, ok := d.integer(path, raw)
	switch {
	case !ok:
		return 0
	case n < 0:
		d.ps.add(path, raw, "is negative; use 1 to run a failure once more on another placement before it becomes a known failure, or 0 for never")
		return 0
	case n > MaxConfirmFailures:
		d.ps.add(path, raw, "is more than %d; one more run on another placement tells a deterministic failure from a flaky one: use 1", MaxConfirmFailures)
		return 0
	}
	return n
}
