package schema

import (
	"fmt"
	"slices"
	"strings"
)

// Cloud is what a task file may say of one cloud sortie provides; the
// cloud registry (controller/clouds) holds each one's.
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
	// ImageTags are the SkyPilot image tags (skypilot:gpu-ubuntu-2004)
	// the cloud resolves to images of its own at launch, in order; an
	// image_id of another tag is refused on the cloud.
	ImageTags []string
	// SharesAccelerators says the cloud may give a fraction of one
	// accelerator (A100:0.5) where its configuration names a shared GPU
	// resource (Kubernetes' time-slicing or MIG resources).
	SharesAccelerators bool
}

// Clouds are the clouds task files may name, in the order messages list
// them. schema names no cloud itself: whoever reads a task file passes the
// clouds it provides (the registry's, controller/clouds.Schema). The zero
// value names none.
type Clouds []Cloud

// Check says whether the clouds can be told apart: every name a
// lower-case one, and no name or alias twice.
func (cs Clouds) Check() error {
	seen := map[string]bool{}
	for _, c := range cs {
		if c.Name == "" || c.Name != strings.ToLower(c.Name) {
			return fmt.Errorf("schema: cloud name %q is not a lower-case name", c.Name)
		}
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if seen[n] {
				return fmt.Errorf("schema: cloud %q is given twice", n)
			}
			seen[n] = true
		}
	}
	return nil
}

// Names are the values resources.cloud accepts: the clouds' names.
func (cs Clouds) Names() []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return names
}

// userNames are the clouds a task may name that messages offer (not the
// hidden ones, for tests).
func (cs Clouds) userNames() []string {
	var names []string
	for _, c := range cs {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return names
}

// Lookup is the cloud of name, an alias or any case of it, and whether cs
// holds one.
func (cs Clouds) Lookup(name string) (Cloud, bool) {
	lc := strings.ToLower(strings.TrimSpace(name))
	for _, c := range cs {
		if c.Name == lc || slices.Contains(c.Aliases, lc) {
			return c, true
		}
	}
	return Cloud{}, false
}

// imageTagClouds lists the clouds that resolve tag, and every tag some
// cloud resolves.
func (cs Clouds) imageTagClouds(tag string) (clouds, known []string) {
	for _, c := range cs {
		if slices.Contains(c.ImageTags, tag) {
			clouds = append(clouds, c.Name)
		}
		for _, t := range c.ImageTags {
			if !slices.Contains(known, t) {
				known = append(known, t)
			}
		}
	}
	slices.Sort(known)
	return clouds, known
}

// storeNames lists the clouds whose storage mounts have a store of their
// own, as a message says it: "aws and gcp".
func (cs Clouds) storeNames() string {
	var names []string
	for _, c := range cs {
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
