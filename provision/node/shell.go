package node

import (
	"context"
	"errors"
	"strings"

	"sortie/provision"
)

// shellBody runs the user's command (or an interactive shell when there
// is none) where the task ran and with what it saw: in the directory of
// the cwd file (the default working directory without one), with the env
// file sourced, and with the node's own HOME
// when the node has one (a local node's home directory, beside its
// attempts' directories).
// The paths come as assignments before the prelude, so nothing the task
// wrote into its env file can change where the shell goes.
const shellBody = `
if [ ! -f "$D/env" ]; then
	echo "sortie: $D holds no task (no env file): the task never started on this node" >&2
	exit 125
fi
eval "set -- $SORTIE_SHELL_ARGV"
unset SORTIE_SHELL_ARGV
# No cwd file: the task ran in the default working directory.
W=$D/workdir
if [ -f "$D/cwd" ]; then
	IFS= read -r -d '' W <"$D/cwd"
	while [[ $W == *$'\n' ]]; do W=${W%$'\n'}; done
fi
if [ -d "$D/home" ]; then
	export HOME=$D/home
elif [ -d "${D%/*}/home" ]; then
	export HOME=${D%/*}/home
fi
export SORTIE_NODE_DIR=$D
cd -- "$W" || exit 125
# What the task's env file sets may be any name, D and W too: the
# arguments are in $@ already and the directory is entered.
. "$D/env" || exit 125
if [ $# -gt 0 ]; then
	exec "$@"
fi
# No rc file: the task's environment stays as the task saw it.
exec "$BASH" --norc --noprofile -i
`

// errNoAttach: the runner cannot stream a command's input and output.
var errNoAttach = errors.New("this node's runner cannot attach a command to a terminal")

// Shell runs argv on the node behind r in the directory the task ran in,
// with the task's environment (its env file), its input and output
// streamed through stdio, and returns argv's exit status. With no argv it
// starts an interactive bash there instead. r must be a
// provision.Attacher.
func Shell(ctx context.Context, r provision.Runner, argv []string, stdio provision.Stdio) (int, error) {
	at, ok := r.(provision.Attacher)
	if !ok {
		return 0, errNoAttach
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = Quote(a)
	}
	s := script(shellBody, "D", r.Dir(), "SORTIE_SHELL_ARGV", strings.Join(words, " "))
	return at.Attach(ctx, s, stdio)
}
