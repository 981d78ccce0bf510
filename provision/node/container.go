package node

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"

	"sortie/provision/node/agent"
)

// Container runs the task's phases in a container image (image_id:
// docker:IMAGE) rather than on the node itself.
type Container struct {
	// Engine is the command ContainerEngine found ("docker", "sudo -n
	// docker", "podman").
	Engine string
	Image  string
	// Mounts are absolute paths on the node that the task sees at the same
	// path inside the container (file_mounts destinations outside the
	// workdir). The node directory, which holds the workdir, always is.
	Mounts []string
}

// containerScript is the agent's container.sh: `container.sh D W PHASE`
// runs the phase's script in a fresh container of the image, with the
// node directory and the mounts at the same paths, the host's network
// (SORTIE_NODE_IPS and the ports resources.ports opened mean what they
// say), the task's env file sourced inside, and the container's exit code
// as its own. `container.sh D W PHASE rm` removes that phase's container
// if it outlived its client (the client was killed hard). The engine's
// --init forwards a stop's SIGTERM to the phase's processes. With
// inMounts, each mount's files are in the node directory's mounts folder
// (agent.MountsDir), as Upload puts them on a node that sandboxes.
func containerScript(dir string, c Container, inMounts bool) string {
	sum := sha256.Sum256([]byte(dir))
	name := "sortie-" + hex.EncodeToString(sum[:8])
	mounts := []string{}
	seen := map[string]bool{}
	for _, m := range c.Mounts {
		m = path.Clean(m)
		if !path.IsAbs(m) || seen[m] {
			continue
		}
		seen[m] = true
		mounts = append(mounts, m)
	}
	sort.Strings(mounts)
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by sortie: runs one phase of the task in %s.\n", c.Image)
	fmt.Fprintf(&b, "D=$1 W=$2 P=$3\nNAME=%s-$P\n", Quote(name))
	fmt.Fprintf(&b, "engine() { %s \"$@\"; }\n", c.Engine)
	b.WriteString(`if [ "$4" = rm ]; then
	engine rm -f "$NAME" >/dev/null 2>&1
	exit 0
fi
set -- run --rm --init --name "$NAME" --network host -v "$D:$D" -w "$W" -e "SORTIE_NODE_DIR=$D" -e "` + agent.ProgressEnv + `=$D/` + agent.ProgressDir + `/` + agent.FileProgressValue + `"
case $W in "$D"/*) ;; *) set -- "$@" -v "$W:$W" ;; esac
`)
	for _, m := range mounts {
		src := m
		if inMounts {
			src = path.Join(dir, agent.MountsDir, m)
		}
		fmt.Fprintf(&b, "set -- \"$@\" -v %s\n", Quote(src+":"+m))
	}
	b.WriteString(`if command -v nvidia-smi >/dev/null 2>&1; then
	case $(engine --version 2>/dev/null) in
	podman*) set -- "$@" --device nvidia.com/gpu=all ;;
	*) set -- "$@" --gpus all ;;
	esac
fi
`)
	fmt.Fprintf(&b, "exec %s \"$@\" %s /bin/sh -c %s \"$D\" \"$P\"\n", c.Engine, Quote(c.Image),
		Quote(`. "$0/env" || exit 1; if command -v bash >/dev/null 2>&1; then exec bash "$0/$1.sh"; fi; exec sh "$0/$1.sh"`))
	return b.String()
}
