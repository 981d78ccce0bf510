package schema

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Cloud is what a task file may say of one cloud sortie provides. schema
// names no cloud itself: the cloud registry (controller/clouds) registers
// each one here (RegisterCloud) when a program links it, and every program
// that reads task files does.
type Cloud struct {
	Name string
	// Aliases are the other names SkyPilot accepts for the cloud (k8s).
	Aliases []string
	// Hidden keeps the cloud out of the clouds messages offer a user
	// (sim, a cloud for tests); a task may still name it.
	Hidden bool
	// Place says whether name is one of the cloud's regions or zones by
	// its form alone, as SkyPilot finds the cloud that has a region
	// (us-east-1 is AWS's, us-east1 GCP's), and, for a zone, the region it
	// is in ("" for a region). Nil for a cloud whose places are named
	// freely (local's regions, Kubernetes contexts).
	Place func(name string) (zoneRegion string, ok bool)
	// WholeRegion says that in infra everything after the cloud is the
	// region, slashes and all, and no zone is given: infra: k8s/CONTEXT,
	// as SkyPilot writes it (a context may hold slashes; the namespace,
	// the zone, is never in it).
	WholeRegion bool
	// Store is the bucket store (StoreS3, StoreGCS) a storage mount
	// without store: uses on the cloud, as SkyPilot picks the cloud's own;
	// "" for none.
	Store string
}

var cloudRegistry struct {
	sync.RWMutex
	clouds []Cloud
}

// RegisterCloud makes c a cloud task files may name. The registry calls it
// once per cloud when the program starts, in the order messages list them;
// registering a name twice panics.
func RegisterCloud(c Cloud) {
	cloudRegistry.Lock()
	defer cloudRegistry.Unlock()
	for _, have := range cloudRegistry.clouds {
		names := append([]string{have.Name}, have.Aliases...)
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if slices.Contains(names, n) {
				panic(fmt.Sprintf("schema: cloud %q is registered twice", n))
			}
		}
	}
	if c.Name == "" || c.Name != strings.ToLower(c.Name) {
		panic(fmt.Sprintf("schema: cloud name %q is not a lower-case name", c.Name))
	}
	cloudRegistry.clouds = append(cloudRegistry.clouds, c)
}

// registeredClouds are the registered clouds, in the order registered.
func registeredClouds() []Cloud {
	cloudRegistry.RLock()
	defer cloudRegistry.RUnlock()
	return cloudRegistry.clouds
}

// Clouds are the values resources.cloud accepts: the registered clouds'
// names.
func Clouds() []string {
	var names []string
	for _, c := range registeredClouds() {
		names = append(names, c.Name)
	}
	return names
}

// userClouds are the clouds a task may name that messages offer (not the
// hidden ones, for tests).
func userClouds() []string {
	var names []string
	for _, c := range registeredClouds() {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return names
}

// registeredCloud is the cloud of name, an alias or any case of it, and
// whether one is registered.
func registeredCloud(name string) (Cloud, bool) {
	lc := strings.ToLower(strings.TrimSpace(name))
	for _, c := range registeredClouds() {
		if c.Name == lc || slices.Contains(c.Aliases, lc) {
			return c, true
		}
	}
	return Cloud{}, false
}

// storeClouds lists the clouds whose storage mounts have a store of their
// own, as a message says it: "aws and gcp".
func storeClouds() string {
	var names []string
	for _, c := range registeredClouds() {
		if c.Store != "" && !c.Hidden {
			names = append(names, c.Name)
		}
	}
	switch len(names) {
	case 0:
		return "no cloud"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
