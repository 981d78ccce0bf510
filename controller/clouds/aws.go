package clouds

import (
	"regexp"
	"sync"

	"sortie/controller/config"
	"sortie/provision/node/notice"
	"sortie/schema"
)

// AWS is EC2's facts; controller/clouds/all opens its provider.
func AWS() Cloud {
	return Cloud{
		Name:   "aws",
		Task:   schema.Cloud{Place: awsPlace, Store: schema.StoreS3},
		Remote: true,
		Notice: func(cfg config.Config) (string, string) { return notice.SourceAWS, cfg.AWS.IMDSEndpoint },
		StorageEnv: func(cfg config.Config, getenv func(string) string, region string) map[string]string {
			return awsStorageEnv(getenv, region, cfg.AWS.IMDSEndpoint)
		},
		Regions:     func(cfg config.Config) []string { return cfg.AWS.Regions },
		BucketNear:  func(location, region string) bool { return location == region },
		BucketBills: "AWS",
	}
}

// AWS names its regions us-east-1, its zones us-east-1a, and a Local Zone
// us-west-2-lax-1a.
var (
	awsPlaceRE = lazyRegexp(`^[a-z]{2}(-gov|-iso[a-z]?)?-(north|south|east|west|central|northeast|northwest|southeast|southwest)-[0-9]+([a-z]|-[a-z]+-[0-9]+[a-z])?$`)
	// awsZoneRE takes the region out of a zone.
	awsZoneRE = lazyRegexp(`^([a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-[0-9]+)(?:[a-z]|-[a-z]+-[0-9]+[a-z])$`)
)

// awsPlace says whether name is an AWS region or zone, and a zone's region.
func awsPlace(name string) (zoneRegion string, ok bool) {
	if !awsPlaceRE().MatchString(name) {
		return "", false
	}
	if m := awsZoneRE().FindStringSubmatch(name); m != nil {
		return m[1], true
	}
	return "", true
}

// awsStorageEnv is what an EC2 node's sync program gets: never
// credentials (it takes the instance profile's role from the instance
// metadata service, aws.imds_endpoint when one is set), the instance's
// region, and the controller's S3 endpoint settings, so that with an
// S3-compatible store the nodes use the store the controller prepared.
func awsStorageEnv(getenv func(string) string, region, imds string) map[string]string {
	env := map[string]string{}
	if region != "" {
		env["AWS_REGION"] = region
	}
	if imds != "" {
		env["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds
	}
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if v := getenv(k); v != "" {
			env[k] = v
		}
	}
	return env
}

// lazyRegexp compiles expr the first time it is used, not when the
// program starts: every sortie command links the registry, and most never
// parse a task.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
