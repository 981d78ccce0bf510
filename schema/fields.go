package schema

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
)

// diskSize reads disk_size in GB: a whole number, or a size with a unit
// (1024GB, 1TB) that comes to a whole number of GB.
func (d *decoder) diskSize(path string, v any) int {
	const fix = "give the disk size in GB, e.g. 256, 1024GB or 1TB"
	var text string
	switch v := v.(type) {
	case nil:
		return 0
	case json.Number:
		text = v.String()
	case string:
		text = strings.TrimSpace(v)
	default:
		d.ps.add(path, v, "is %s; %s", typeName(v), fix)
		return 0
	}
	m := quantityRE().FindStringSubmatch(text)
	if m == nil || m[3] != "" {
		d.ps.add(path, v, "is not a size; %s", fix)
		return 0
	}
	factor, ok := memoryUnits()[strings.ToLower(m[2])]
	if !ok {
		d.ps.add(path, v, "has an unknown unit %q; %s", m[2], fix)
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	n *= factor
	switch {
	case err != nil || n < 1:
		d.ps.add(path, v, "is less than 1 GB; %s", fix)
	case n != math.Trunc(n):
		d.ps.add(path, v, "is not a whole number of GB; %s", fix)
	case n > math.MaxInt32:
		d.ps.add(path, v, "is out of range; %s", fix)
	default:
		return int(n)
	}
	return 0
}

// dollars reads a sum of money in dollars: a number above zero (a "$"
// before it is allowed); zero when absent.
func (d *decoder) dollars(path string, v any, fix string) float64 {
	var text string
	switch v := v.(type) {
	case nil:
		return 0
	case json.Number:
		text = v.String()
	case string:
		text = strings.TrimPrefix(strings.TrimSpace(v), "$")
	default:
		d.ps.add(path, v, "is %s; %s", typeName(v), fix)
		return 0
	}
	n, err := strconv.ParseFloat(text, 64)
	switch {
	case err != nil || math.IsNaN(n) || math.IsInf(n, 0):
		d.ps.add(path, v, "is not a number of dollars; %s", fix)
	case n <= 0:
		d.ps.add(path, v, "is not above zero; %s", fix)
	default:
		return n
	}
	return 0
}

func diskTiers() []string    { return []string{"low", "medium", "high", "ultra", "best"} }
func networkTiers() []string { return []string{"standard", "best"} }

// tier reads disk_tier or network_tier, case-insensitive, as lower case.
func (d *decoder) tier(path string, v any, tiers []string) string {
	s := d.str(path, v)
	if s == "" {
		return ""
	}
	t := strings.ToLower(strings.TrimSpace(s))
	if slices.Contains(tiers, t) {
		return t
	}
	d.ps.add(path, s, "is not a tier; use one of %s", strings.Join(tiers, ", "))
	return ""
}

// ports reads a port, "8080", a range "10000-10010" or a list of them, as
// strings: "8080" or "10000-10010" (a range of one port is that port).
func (d *decoder) ports(path string, v any) []string {
	var items []any
	var paths []string
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		items = v
		for i := range v {
			paths = append(paths, index(path, i))
		}
	default:
		items, paths = []any{v}, []string{path}
	}
	var out []string
	for i, item := range items {
		p, ok := d.port(paths[i], item)
		if !ok {
			continue
		}
		if slices.Contains(out, p) {
			d.ps.add(paths[i], item, "is listed twice; list each port once")
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *decoder) port(path string, v any) (string, bool) {
	const fix = `give a port from 1 to 65535 or a range "LOW-HIGH", e.g. 8080 or "10000-10010"`
	var text string
	switch v := v.(type) {
	case json.Number:
		text = v.String()
	case string:
		text = strings.TrimSpace(v)
	default:
		d.ps.add(path, v, "is %s; %s", typeName(v), fix)
		return "", false
	}
	lowText, highText, isRange := strings.Cut(text, "-")
	low, err1 := strconv.Atoi(strings.TrimSpace(lowText))
	high, err2 := low, error(nil)
	if isRange {
		high, err2 = strconv.Atoi(strings.TrimSpace(highText))
	}
	switch {
	case err1 != nil || err2 != nil:
		d.ps.add(path, v, "is not a port; %s", fix)
	case low < 1 || low > 65535 || high < 1 || high > 65535:
		d.ps.add(path, v, "is out of range; %s", fix)
	case low > high:
		d.ps.add(path, v, "is a range whose low end is above its high end; write it as LOW-HIGH")
	case low == high:
		return strconv.Itoa(low), true
	default:
		return strconv.Itoa(low) + "-" + strconv.Itoa(high), true
	}
	return "", false
}

// labels reads a mapping of label to value; values are scalars made
// strings as SkyPilot's str() makes them (true becomes "True").
func (d *decoder) labels(path string, v any) map[string]string {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.ps.add(path, v, "is %s; expected a mapping of label to value", typeName(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		p := join(path, k)
		if strings.TrimSpace(k) == "" {
			d.ps.missing(p, "has an empty label name; give one")
			continue
		}
		s, ok := scalarString(m[k])
		if !ok {
			d.ps.add(p, m[k], "is %s; give a string value", typeName(m[k]))
			continue
		}
		out[k] = s
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// images is image_id read: one image, or one per region.
type images struct {
	one       string
	perRegion map[string]string
}

// imageID reads an image id ("ami-...", a GCE image, "docker:IMAGE") or
// a mapping of region to image id.
func (d *decoder) imageID(path string, v any) images {
	m, ok := v.(map[string]any)
	if !ok {
		return images{one: d.imageTag(path, d.str(path, v))}
	}
	if len(m) == 0 {
		d.ps.add(path, m, "is empty; give an image id, or a mapping of region to image id")
		return images{}
	}
	if _, both := m["docker"]; both {
		d.ps.missing(join(path, "docker"), "gives a docker image beside VM images, which is not supported yet; give image_id: docker:IMAGE alone, or the VM images alone")
		return images{}
	}
	out := images{perRegion: map[string]string{}}
	for _, region := range sortedKeys(m) {
		p := join(path, region)
		img := d.str(p, m[region])
		if strings.TrimSpace(img) == "" {
			d.ps.missing(p, "has no image id; give the image to boot in region %s", region)
			continue
		}
		out.perRegion[region] = d.imageTag(p, img)
	}
	return out
}

// imageTag checks a SkyPilot image tag (skypilot:gpu-ubuntu-2004): one
// that no cloud resolves is refused, naming the tags that are known. Which
// cloud the tag is used on is checked once the resources are read
// (checkImageTags).
func (d *decoder) imageTag(path, img string) string {
	tag := strings.TrimSpace(img)
	if !strings.HasPrefix(tag, imageTagPrefix) {
		return img
	}
	if clouds, known := d.clouds.imageTagClouds(tag); len(clouds) == 0 {
		if len(known) == 0 {
			d.ps.add(path, img, "is a SkyPilot image tag, and no cloud sortie provides here resolves one; give the cloud's image id, docker:IMAGE, or remove image_id")
		} else {
			d.ps.add(path, img, "is not a SkyPilot image tag sortie knows; the known tags are %s; use one of those, the cloud's image id, or remove image_id",
				strings.Join(known, ", "))
		}
		return ""
	}
	return tag
}

// imageTagPrefix starts SkyPilot's image tags.
const imageTagPrefix = "skypilot:"

// checkImageTags refuses a SkyPilot image tag on a cloud that does not
// resolve it, naming the tag, the cloud and the tags the cloud knows: the
// resources' images on their cloud and on each candidate's that takes them,
// a candidate's own image on its cloud. Where no cloud is named, the
// provider the launch picks resolves the tag, or says it cannot. Called
// before candidates are expanded, while a candidate's image is its own.
func (d *decoder) checkImageTags(path string, r Resources, base images) {
	seen := map[string]bool{}
	check := func(p, img, cloud string) {
		key := p + " " + img + " " + cloud
		if !strings.HasPrefix(img, imageTagPrefix) || cloud == "" || seen[key] {
			return
		}
		seen[key] = true
		c, ok := d.clouds.Lookup(cloud)
		if !ok || slices.Contains(c.ImageTags, img) {
			return
		}
		if len(c.ImageTags) == 0 {
			clouds, _ := d.clouds.imageTagClouds(img)
			d.ps.add(p, img, "is a SkyPilot image tag, which %s does not resolve (tags resolve on %s); give %s an image of its own, or remove image_id",
				c.Name, strings.Join(clouds, " and "), c.Name)
			return
		}
		d.ps.add(p, img, "is a SkyPilot image tag with no image on %s; %s knows %s; use one of those, the cloud's image id, or remove image_id",
			c.Name, c.Name, strings.Join(c.ImageTags, ", "))
	}
	type use struct{ path, img string }
	var own []use
	if base.perRegion == nil {
		own = append(own, use{join(path, "image_id"), base.one})
	} else {
		for _, region := range sortedKeys(base.perRegion) {
			own = append(own, use{join(join(path, "image_id"), region), base.perRegion[region]})
		}
	}
	var clouds []string
	if r.Cloud != "" {
		clouds = append(clouds, r.Cloud)
	}
	for _, group := range []struct {
		field string
		items []Resources
	}{{"any_of", r.AnyOf}, {"ordered", r.Ordered}} {
		for i, it := range group.items {
			switch {
			case it.ImageID != "":
				check(index(join(path, group.field), i)+".image_id", it.ImageID, cmp.Or(it.Cloud, r.Cloud))
			case it.Cloud != "":
				clouds = append(clouds, it.Cloud)
			}
		}
	}
	for _, u := range own {
		for _, c := range clouds {
			check(u.path, u.img, c)
		}
	}
}

// pick returns the image for region. Without a region, a mapping of one
// region is not enough to pick from when strict (a candidate cannot be
// split by region); the caller expands it instead.
func (im images) pick(d *decoder, path, region, regionPath string, strict bool) string {
	if im.perRegion == nil {
		return im.one
	}
	if region == "" {
		if strict {
			d.ps.missing(path, "is a mapping of region to image id, but this candidate names no region; give it a region or infra, or one image id")
		}
		return ""
	}
	img, ok := im.perRegion[region]
	if !ok {
		d.ps.missing(path, "has no image for region %s (%s); add %s to the mapping, or pick one of %s",
			region, regionPath, region, strings.Join(sortedKeys(im.perRegion), ", "))
	}
	return img
}

// expandImages applies a per-region image_id: a pinned region takes its
// entry; otherwise each candidate (or the resources themselves) becomes
// one candidate per region of the mapping, each with its image. A
// candidate with a region of its own or an image of its own is kept.
func (d *decoder) expandImages(path string, r *Resources, im images) {
	imgPath := join(path, "image_id")
	if r.Region != "" {
		r.ImageID = im.pick(d, imgPath, r.Region, join(path, "region"), false)
		return
	}
	if len(r.AnyOf) == 0 && len(r.Ordered) == 0 && len(im.perRegion) == 1 {
		// One region: the resources themselves go there.
		for region, img := range im.perRegion {
			r.Region, r.ImageID = region, img
		}
		return
	}
	field, items := "any_of", r.AnyOf
	if len(r.Ordered) > 0 {
		field, items = "ordered", r.Ordered
	}
	if len(items) == 0 {
		items = []Resources{{}}
	}
	var out []Resources
	for i, item := range items {
		switch {
		case item.ImageID != "":
			out = append(out, item)
		case item.Region != "":
			c := item.clone()
			c.ImageID = im.pick(d, imgPath, item.Region, index(join(path, field), i)+".region", false)
			out = append(out, c)
		default:
			for _, region := range sortedKeys(im.perRegion) {
				c := item.clone()
				c.Region, c.ImageID = region, im.perRegion[region]
				out = append(out, c)
			}
		}
	}
	if field == "ordered" {
		r.Ordered = out
	} else {
		r.AnyOf = out
	}
}
