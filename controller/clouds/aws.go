package clouds

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"gopkg.in/ini.v1"

	"sortie/controller/config"
	"sortie/provision/imagetag"
	"sortie/provision/node/notice"
	"sortie/schema"
)

// AWS is EC2's facts; controller/clouds/all opens its provider.
func AWS() Cloud {
	return Cloud{
		Name:           "aws",
		BillingMinimum: time.Minute,
		Task:           schema.Cloud{Place: awsPlace, Store: schema.StoreS3, ImageTags: imagetag.Names(imagetag.AWS())},
		Remote:         true,
		ImageTag:       func(image string) (string, bool) { return imagetag.Describe(imagetag.AWS(), image) },
		Notice:         func(cfg config.Config) (string, string) { return notice.SourceAWS, cfg.AWS.IMDSEndpoint },
		StorageEnv: func(cfg config.Config, getenv func(string) string, region string) map[string]string {
			return awsStorageEnv(getenv, region, cfg.AWS.IMDSEndpoint)
		},
		Enabled:     awsCredentials,
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

// awsCredentials finds where the SDK's standard chain would take AWS
// credentials from on m, reading the environment and the shared files
// only, in the chain's order: the profile aws.profile names; the
// environment's keys; a web identity token; the profile AWS_PROFILE (else
// "default") names in the shared credentials and config files; the
// container's credentials endpoint; the instance role, when m is an EC2
// instance (its firmware says so) or names its metadata service, and
// AWS_EC2_METADATA_DISABLED is not true. Whether the credentials found
// are accepted only AWS can say: `sortie check` asks it next.
func awsCredentials(cfg config.Config, m Machine) (string, error) {
	profile, named := cfg.AWS.Profile, cfg.AWS.Profile != ""
	if !named {
		switch {
		case m.getenv("AWS_ACCESS_KEY_ID") != "" && m.getenv("AWS_SECRET_ACCESS_KEY") != "",
			m.getenv("AWS_ACCESS_KEY") != "" && m.getenv("AWS_SECRET_KEY") != "":
			return "environment (AWS_ACCESS_KEY_ID)", nil
		case m.getenv("AWS_WEB_IDENTITY_TOKEN_FILE") != "":
			return "web identity token (AWS_WEB_IDENTITY_TOKEN_FILE)", nil
		}
		profile = firstSet(m.getenv("AWS_PROFILE"), m.getenv("AWS_DEFAULT_PROFILE"), "default")
	}
	files := awsSharedFiles(m)
	section, found, err := awsProfile(m, files, profile)
	if err != nil {
		return "", err
	}
	if named && found == "" {
		return "", fmt.Errorf("aws.profile in config.yaml: profile %q is in neither %s; add it (`aws configure --profile %s`) or fix aws.profile",
			profile, strings.Join(files[:], " nor "), profile)
	}
	if found != "" {
		for _, k := range []string{"aws_access_key_id", "source_profile", "credential_source", "web_identity_token_file",
			"sso_session", "sso_start_url", "sso_account_id", "credential_process", "login_session"} {
			if section.HasKey(k) {
				return fmt.Sprintf("profile %s (%s)", profile, found), nil
			}
		}
	}
	if m.getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") != "" || m.getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI") != "" {
		return "container credentials (AWS_CONTAINER_CREDENTIALS_*)", nil
	}
	imds := "this machine is no EC2 instance"
	switch {
	case strings.EqualFold(m.getenv("AWS_EC2_METADATA_DISABLED"), "true"):
		imds = "the instance role is not asked (AWS_EC2_METADATA_DISABLED=true)"
	case m.getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT") != "":
		return "instance role (" + m.getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT") + ")", nil
	case onEC2(m):
		return "instance role (instance metadata service)", nil
	}
	where := "profile " + profile + " has no credentials"
	if found == "" {
		where = "no profile " + profile + " in " + strings.Join(files[:], " or ")
	}
	return "", fmt.Errorf("no AWS credentials: none in the environment, %s, and %s; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "+
		"choose a profile with AWS_PROFILE or aws.profile in config.yaml, or run `aws configure`", where, imds)
}

// awsSharedFiles are the shared config and credentials files, as the SDK
// finds them.
func awsSharedFiles(m Machine) [2]string {
	return [2]string{
		firstSet(m.getenv("AWS_CONFIG_FILE"), filepath.Join(m.home(), ".aws", "config")),
		firstSet(m.getenv("AWS_SHARED_CREDENTIALS_FILE"), filepath.Join(m.home(), ".aws", "credentials")),
	}
}

// awsProfile reads profile from the shared files: its keys, both files'
// merged (the credentials file's win), and the files that hold it ("" for
// none). A file that is missing holds none; one that cannot be parsed is
// an error naming it.
func awsProfile(m Machine, files [2]string, profile string) (*ini.Section, string, error) {
	merged := ini.Empty()
	into, _ := merged.NewSection(profile)
	var found []string
	for i, path := range files {
		b, err := m.readFile(path)
		if err != nil {
			continue
		}
		f, err := ini.LoadSources(ini.LoadOptions{InsensitiveKeys: true, SkipUnrecognizableLines: true, AllowPythonMultilineValues: true}, b)
		if err != nil {
			return nil, "", fmt.Errorf("%s cannot be read: %v; fix it or point %s elsewhere", path, err, [2]string{"AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"}[i])
		}
		name := profile
		if i == 0 && profile != "default" {
			name = "profile " + profile // the config file's name for it
		}
		sec, err := f.GetSection(name)
		if err != nil && i == 0 && profile == "default" {
			sec, err = f.GetSection("profile default")
		}
		if err != nil {
			continue
		}
		found = append(found, path)
		for _, k := range sec.Keys() {
			into.Key(k.Name()).SetValue(k.Value())
		}
	}
	return into, strings.Join(found, ", "), nil
}

// onEC2 says whether m's firmware names EC2: the vendor of a Nitro
// instance, the BIOS version or hypervisor id of a Xen one.
func onEC2(m Machine) bool {
	if m.dmi("sys_vendor") == "Amazon EC2" || m.dmi("bios_vendor") == "Amazon EC2" ||
		strings.Contains(strings.ToLower(m.dmi("bios_version")), "amazon") {
		return true
	}
	b, err := m.readFile("/sys/hypervisor/uuid")
	return err == nil && strings.HasPrefix(strings.ToLower(string(b)), "ec2")
}

// firstSet is the first of ss that is not "".
func firstSet(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
