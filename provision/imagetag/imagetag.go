// Package imagetag reads SkyPilot's image tags (image_id:
// skypilot:gpu-ubuntu-2004) and says, for each cloud that resolves them,
// which of the cloud's own public images a tag stands for and how to ask
// the cloud for it: on AWS the newest image of a publisher's account whose
// name matches a pattern, on GCP an image family of a public project.
//
// The table is data only: it links no cloud SDK, so the CLI's plan can say
// what a tag becomes, and each provider asks its cloud at launch.
package imagetag

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Prefix starts every SkyPilot image tag.
const Prefix = "skypilot:"

// Parse returns the tag of image ("gpu-ubuntu-2004" of
// "skypilot:gpu-ubuntu-2004") and whether image is a tag at all.
func Parse(image string) (tag string, ok bool) {
	tag, ok = strings.CutPrefix(strings.TrimSpace(image), Prefix)
	return strings.TrimSpace(tag), ok
}

// Publishers' AWS accounts.
const (
	// OwnerCanonical publishes the official Ubuntu images.
	OwnerCanonical = "099720109477"
	// OwnerDebian publishes the official Debian images (10 and later).
	OwnerDebian = "136693071363"
	// OwnerDLAMI publishes AWS's Deep Learning AMIs (NVIDIA driver and
	// CUDA installed): the GPU flavour of an OS on EC2.
	OwnerDLAMI = "898082745236"
)

// AWSImage is how EC2 finds a tag's image: the newest (by CreationDate)
// available image of Owner whose name matches Name, an EC2 name filter in
// which {arch} stands for amd64 or arm64, for the instance's architecture
// (the image's architecture must match too).
type AWSImage struct {
	Owner, Name string
}

// NameFor is the name filter for arch ("x86_64" or "arm64").
func (a AWSImage) NameFor(arch string) string {
	deb := "amd64"
	if arch == "arm64" {
		deb = "arm64"
	}
	return strings.ReplaceAll(a.Name, "{arch}", deb)
}

// Describe says what the plan prints of the lookup.
func (a AWSImage) Describe() string {
	s := fmt.Sprintf("the newest image of account %s named %s", a.Owner, a.NameFor("x86_64"))
	if strings.Contains(a.Name, "{arch}") {
		s += " (arm64 for an arm64 instance)"
	} else {
		s += " (x86_64 only)"
	}
	return s
}

// GCPImage is how Compute Engine finds a tag's image: the family's newest
// image in a public project (images.getFromFamily).
type GCPImage struct {
	Project, Family string
}

// Path is the family's path, as a boot disk may name it.
func (g GCPImage) Path() string {
	return "projects/" + g.Project + "/global/images/family/" + g.Family
}

// Describe says what the plan prints of the lookup.
func (g GCPImage) Describe() string {
	return "the newest image of family " + g.Family + " in project " + g.Project
}

// AWS is the tags EC2 resolves. Ubuntu's CPU images are Canonical's; the
// GPU flavour is AWS's Deep Learning Base AMI of the same Ubuntu release
// (x86_64 only); Debian's are Debian's own. Debian has no GPU image on EC2.
func AWS() map[string]AWSImage {
	ubuntu := func(release string) AWSImage {
		return AWSImage{Owner: OwnerCanonical, Name: "ubuntu/images/hvm-ssd*/ubuntu-" + release + "-{arch}-server-*"}
	}
	return map[string]AWSImage{
		"cpu-ubuntu-1804": ubuntu("bionic-18.04"),
		"cpu-ubuntu-2004": ubuntu("focal-20.04"),
		"cpu-ubuntu-2204": ubuntu("jammy-22.04"),
		"gpu-ubuntu-1804": {Owner: OwnerDLAMI, Name: "Deep Learning Base AMI (Ubuntu 18.04) Version *"},
		"gpu-ubuntu-2004": {Owner: OwnerDLAMI, Name: "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 20.04) *"},
		"gpu-ubuntu-2204": {Owner: OwnerDLAMI, Name: "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *"},
		"cpu-debian-10":   {Owner: OwnerDebian, Name: "debian-10-{arch}-*"},
		"cpu-debian-11":   {Owner: OwnerDebian, Name: "debian-11-{arch}-*"},
	}
}

// GCP is the tags Compute Engine resolves: Canonical's and Debian's
// families for the CPU flavour, Google's Deep Learning VM families
// (NVIDIA driver and CUDA installed) for the GPU one.
func GCP() map[string]GCPImage {
	return map[string]GCPImage{
		"cpu-ubuntu-1804": {Project: "ubuntu-os-cloud", Family: "ubuntu-1804-lts"},
		"cpu-ubuntu-2004": {Project: "ubuntu-os-cloud", Family: "ubuntu-2004-lts"},
		"cpu-ubuntu-2204": {Project: "ubuntu-os-cloud", Family: "ubuntu-2204-lts"},
		"gpu-ubuntu-2004": {Project: "deeplearning-platform-release", Family: "common-cu113-ubuntu-2004"},
		"gpu-ubuntu-2204": {Project: "deeplearning-platform-release", Family: "common-cu121-ubuntu-2204-py310"},
		"cpu-debian-10":   {Project: "debian-cloud", Family: "debian-10"},
		"cpu-debian-11":   {Project: "debian-cloud", Family: "debian-11"},
		"gpu-debian-10":   {Project: "deeplearning-platform-release", Family: "common-cu113-debian-10"},
		"gpu-debian-11":   {Project: "deeplearning-platform-release", Family: "common-cu121-debian-11-py310"},
	}
}

// Describe says how a cloud whose table is table resolves image at
// launch, and whether image is a tag the table holds.
func Describe[V interface{ Describe() string }](table map[string]V, image string) (string, bool) {
	tag, ok := Parse(image)
	if !ok {
		return "", false
	}
	look, ok := table[tag]
	if !ok {
		return "", false
	}
	return look.Describe(), true
}

// Names lists a table's tags, each with the prefix, in order.
func Names[V any](table map[string]V) []string {
	out := make([]string, 0, len(table))
	for t := range table {
		out = append(out, Prefix+t)
	}
	sort.Strings(out)
	return out
}

// Unknown is the error of a tag a cloud has no image for: it names the
// tag, the cloud and the tags the cloud knows.
func Unknown(image, cloud string, known []string) error {
	if len(known) == 0 {
		return fmt.Errorf("%q is a SkyPilot image tag, and %s resolves none; give the cloud's own image (or docker:IMAGE), or remove image_id", image, cloud)
	}
	return fmt.Errorf("%q is a SkyPilot image tag with no image on %s; %s knows %s; use one of those, the cloud's own image id, or remove image_id",
		image, cloud, cloud, strings.Join(slices.Clone(known), ", "))
}
