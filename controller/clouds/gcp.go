package clouds

import (
	"context"
	"errors"
	"strings"
	"time"

	"sortie/controller/config"
	"sortie/provision/gcp/adc"
	"sortie/provision/imagetag"
	"sortie/provision/node/notice"
	"sortie/schema"
)

// GCP is Compute Engine's facts; controller/clouds/all opens its provider.
// Its nodes' sync program takes the instance's service account.
func GCP() Cloud {
	return Cloud{
		Name:           "gcp",
		BillingMinimum: time.Minute,
		Task:           schema.Cloud{Place: gcpPlace, Store: schema.StoreGCS, ImageTags: imagetag.Names(imagetag.GCP())},
		Remote:         true,
		ImageTag:       func(image string) (string, bool) { return imagetag.Describe(imagetag.GCP(), image) },
		Notice:         func(cfg config.Config) (string, string) { return notice.SourceGCE, cfg.GCP.MetadataEndpoint },
		Enabled:        gcpCredentials,
		Regions:        func(cfg config.Config) []string { return cfg.GCP.Regions },
		BucketNear:     gcsNear,
		BucketBills:    "Google",
	}
}

// gcpPlaceRE is the form of GCP's regions (us-east1) and zones
// (us-east1-b).
var gcpPlaceRE = lazyRegexp(`^[a-z]+-(north|south|east|west|central|northeast|northwest|southeast|southwest)[0-9]+(-[a-z])?$`)

// gcpPlace says whether name is a GCP region or zone, and a zone's region.
func gcpPlace(name string) (zoneRegion string, ok bool) {
	if !gcpPlaceRE().MatchString(name) {
		return "", false
	}
	if strings.Count(name, "-") == 2 {
		return name[:strings.LastIndex(name, "-")], true
	}
	return "", true
}

// gcsNear says whether a Cloud Storage bucket at location (lower-cased, as
// sortie-sync region prints it) is near a GCP region: the same region, or
// the multi-region that holds it (us holds us-*, eu europe-*, asia
// asia-*). A dual-region, or a name it does not know, counts as near: the
// dry run warns only of what it is sure of.
func gcsNear(location, region string) bool {
	location, region = strings.ToLower(location), strings.ToLower(region)
	switch location {
	case region:
		return true
	case "us":
		return strings.HasPrefix(region, "us-")
	case "eu":
		return strings.HasPrefix(region, "europe-")
	case "asia":
		return strings.HasPrefix(region, "asia-")
	}
	// A region reads as a word, one dash, a word ending in a digit
	// ("us-central1", "europe-west4"); "nam4" or "eur4" are dual-regions.
	last := location[len(location)-1]
	isRegion := strings.Count(location, "-") == 1 && !strings.HasPrefix(location, "-") && last >= '0' && last <= '9'
	return !isRegion
}

// gcpCredentials finds application default credentials and a project on
// m as `sortie check` does, taking a Compute Engine VM's service account
// and project as found without asking its metadata server.
func gcpCredentials(cfg config.Config, m Machine) (string, error) {
	f := adc.Find(context.Background(), adc.Machine{Getenv: m.getenv, Home: m.home(),
		OnGCE: func(context.Context) bool { return adc.MachineSaysGCE(m.getenv, m.readFile) }}, cfg.GCP.Endpoint, cfg.GCP.Project)
	if len(f.Problems) > 0 {
		return "", errors.New(strings.Join(f.Problems, "; "))
	}
	return f.Credentials, nil
}
