package node

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sortie/provision"
)

// PrecheckError is something a node lacks that no retry on it can give it
// (a container engine, git, a repository's ref): the job ends
// FAILED_PRECHECKS with Msg rather than run the task wrong.
type PrecheckError struct{ Msg string }

func (e *PrecheckError) Error() string { return e.Msg }

// Exit codes by which the scripts say what the node lacks (engineBody,
// cloneBody).
const (
	exitNoEngine = 93
	exitNoGit    = 94
	exitNoRepo   = 95
	exitNoRef    = 96
)

// precheck turns a script's exit with one of the codes above into a
// PrecheckError carrying its stderr; other errors are returned as they are.
func precheck(err error, codes ...int) error {
	var ee *provision.ExitError
	if errors.As(err, &ee) {
		for _, c := range codes {
			if ee.Code == c {
				return &PrecheckError{Msg: strings.TrimSpace(ee.Stderr)}
			}
		}
	}
	return err
}

// engineBody prints the command that reaches a container engine on the
// node: docker, else docker through sudo (a login user outside the docker
// group), else podman. It asks the engine itself (info), not just the
// client: a docker client with no daemon behind it runs nothing. With
// INSTALL=1 (a cloud VM of sortie's own, booted from a stock image) a node
// without docker gets it from its package manager first.
const engineBody = `
find_engine() {
	why=
	for e in docker "sudo -n docker" podman; do
		bin=${e##* }
		command -v "$bin" >/dev/null 2>&1 || continue
		if err=$($e info 2>&1 >/dev/null); then
			echo "$e"
			return 0
		fi
		case $e in "sudo -n docker") continue ;; esac
		why="$why; $bin is installed but its engine does not answer ($bin info: $(printf '%s' "$err" | tail -n 2 | tr '\n' ' '))"
	done
	if [ -z "$why" ]; then
		why="; neither docker nor podman is installed"
	fi
	return 1
}
find_engine && exit 0
if [ "$INSTALL" = 1 ] && ! command -v docker >/dev/null 2>&1; then
	as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
	if command -v apt-get >/dev/null 2>&1; then
		out=$(as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 update -qq 2>&1 &&
			as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 install -y -qq docker.io 2>&1)
	elif command -v dnf >/dev/null 2>&1; then
		out=$(as_root dnf install -y -q docker 2>&1)
	else
		out="no apt-get or dnf to install it with"
	fi
	as_root systemctl start docker >/dev/null 2>&1
	find_engine && exit 0
	why="$why; installing docker failed: $(printf '%s' "$out" | tail -n 2 | tr '\n' ' ')"
fi
echo "no container engine on the node${why}" >&2
exit 93
`

// ContainerEngine returns the command that runs containers on the node
// behind r ("docker", "sudo -n docker" or "podman"), or a PrecheckError
// saying why there is none. install lets it install docker on a node
// without one (see engineBody); never on a machine that is not sortie's.
func ContainerEngine(ctx context.Context, r provision.Runner, install bool) (string, error) {
	flag := ""
	if install {
		flag = "1"
	}
	out, err := r.Exec(ctx, script(engineBody, "D", r.Dir(), "INSTALL", flag), nil)
	if err != nil {
		return "", precheck(fmt.Errorf("find a container engine: %w", err), exitNoEngine)
	}
	engine := strings.TrimSpace(string(out))
	switch engine {
	case "docker", "sudo -n docker", "podman":
		return engine, nil
	}
	return "", fmt.Errorf("find a container engine: unexpected answer %q", engine)
}
