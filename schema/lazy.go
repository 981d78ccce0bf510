package schema

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr the first time it is used, not when the
// program starts: every sortie command links this package, and most never
// parse a task.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
