package node

import (
	"context"
	"fmt"

	"sortie/provision"
)

// cloneBody clones $URL at $REF (a branch, tag or commit; empty is the
// remote's default branch) into $T, replacing what a half-done earlier
// clone left there. Once the task has started it does nothing, as Upload.
const cloneBody = `
if [ -e "$D/started" ]; then
	exit 0
fi
if ! command -v git >/dev/null 2>&1; then
	echo "git is not installed on the node; install it there (e.g. in the image) or give workdir as a local directory" >&2
	exit 94
fi
case $T in /*) ;; *) T=$D/$T ;; esac
mkdir -p "$D" "$(dirname "$T")" || exit 1
C=$(mktemp -d "$(dirname "$T")/.clone.XXXXXX") || exit 1
trap 'rm -rf "$C"' EXIT
export GIT_TERMINAL_PROMPT=0
if ! err=$(git clone -q --no-checkout -- "$URL" "$C/repo" 2>&1); then
	case $err in
	*"not found"* | *"does not exist"* | *"does not appear to be a git repository"* | *"Authentication failed"* | *"could not read Username"* | *"Permission denied"*)
		echo "clone $URL: $err" >&2
		exit 95
		;;
	esac
	echo "clone $URL: $err" >&2
	exit 97
fi
cd "$C/repo" || exit 1
# A clone without checkout has no index: reset --hard fills the tree of
# what was checked out.
if [ -z "$REF" ]; then
	git reset -q --hard HEAD || exit 1
elif git rev-parse -q --verify "refs/remotes/origin/$REF^{commit}" >/dev/null; then
	git checkout -q -B "$REF" "refs/remotes/origin/$REF" && git reset -q --hard || exit 1
elif git rev-parse -q --verify "$REF^{commit}" >/dev/null; then
	git -c advice.detachedHead=false checkout -q --detach "$REF^{commit}" && git reset -q --hard || exit 1
else
	echo "workdir.ref: $REF is not a branch, tag or commit of $URL; give one that is" >&2
	exit 96
fi
cd / && rm -rf "$T" && mv "$C/repo" "$T"
`

// Clone clones the git repository url at ref into remoteSubdir on the node
// behind r (relative to r.Dir(), or absolute), before the task starts: the
// task's workdir given as {url, ref}. A node without git, a repository
// that is not there or refuses access, and a ref it does not have are
// PrecheckErrors; a clone that fails otherwise (the network) is an
// ordinary error, worth another try. It does nothing once the task has
// started.
func Clone(ctx context.Context, r provision.Runner, url, ref, remoteSubdir string) error {
	if err := checkRemote(remoteSubdir); err != nil {
		return fmt.Errorf("clone %s: %w", url, err)
	}
	s := script(cloneBody, "D", r.Dir(), "T", remoteSubdir, "URL", url, "REF", ref)
	if _, err := r.Exec(ctx, s, nil); err != nil {
		return precheck(fmt.Errorf("clone %s at %q: %w", url, ref, err), exitNoGit, exitNoRepo, exitNoRef)
	}
	return nil
}
