package node

import (
	"strings"
	"testing"
)

// On a node that sandboxes, Upload keeps an absolute mount's files in the
// node directory's mounts folder: the container is shown them from there,
// at the mount's own path.
func TestContainerMountsFromTheMountsFolderOnASandboxingNode(t *testing.T) {
	c := Container{Engine: "docker", Image: "img", Mounts: []string{"/data/x"}}
	plain := containerScript("/n", c, false)
	if !strings.Contains(plain, `-v '/data/x:/data/x'`) {
		t.Errorf("a node that does not sandbox mounts the path itself:\n%s", plain)
	}
	sandboxed := containerScript("/n", c, true)
	if !strings.Contains(sandboxed, `-v '/n/mounts/data/x:/data/x'`) || strings.Contains(sandboxed, "'/data/x:/data/x'") {
		t.Errorf("a sandboxing node's mount must come from its mounts folder:\n%s", sandboxed)
	}
}
