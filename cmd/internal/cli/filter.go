package cli

import (
	"os"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"sortie/controller/contract"
)

// FilterOptions are the job filter flags `jobs retry` and `jobs cancel`
// share: --status, --name/-n, --since.
type FilterOptions struct {
	Statuses []string
	Name     string
	// Since is a duration back from now (24h, 2d) or a time (2026-11-30,
	// 2026-11-30T15:04:05Z), read by contract.ParseSince.
	Since string
}

// add registers the flags on fs; what says what the filter selects for
// the help texts ("retry", "cancel").
func (o *FilterOptions) add(fs *pflag.FlagSet, what, among string) {
	fs.StringSliceVar(&o.Statuses, "status", nil, what+" every "+among+" job with these statuses (comma-separated)")
	fs.StringVarP(&o.Name, "name", "n", "", what+" every "+among+" job whose name matches this pattern (* ? [...], e.g. 'sweep-*')")
	fs.StringVar(&o.Since, "since", "", "with a filter: only jobs submitted since then: a duration back from now (90m, 24h, 2d) or a time (2026-11-30, 2026-11-30 15:04, 2026-11-30T15:04:05Z)")
}

// given says whether any filter flag was given.
func (o *FilterOptions) given() bool { return len(o.Statuses) > 0 || o.Name != "" || o.Since != "" }

// filter turns the flags into the service's filter, reading --since
// against f's clock.
func (o *FilterOptions) filter(f *Factory) (contract.Filter, error) {
	since, err := contract.ParseSince(o.Since, f.Now())
	if err != nil {
		return contract.Filter{}, err
	}
	return contract.Filter{Statuses: statuses(o.Statuses), NameGlob: o.Name, Since: since}, nil
}

// stdinIsTerminal says whether this process's standard input is a
// terminal, where a question can be answered (not /dev/null, which is a character device too).
func stdinIsTerminal() bool { return term.IsTerminal(int(os.Stdin.Fd())) }
