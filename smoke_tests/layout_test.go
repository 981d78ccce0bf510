package smoke_tests

import (
	"os/exec"
	"strings"
	"testing"
)

// importRule says what the packages matching pkg (a path under sortie/,
// "/..." for the path and everything under it) must not depend on, and why.
type importRule struct {
	pkg    string
	banned []string
	why    string
}

// Patterns that name the cloud SDKs.
var cloudSDKs = []string{"github.com/aws/...", "cloud.google.com/...", "google.golang.org/...", "k8s.io/..."}

// importRules are the layout's rules. Each package's doc comment says the
// same in words.
var importRules = []importRule{
	{"cmd/sortie", append([]string{"sortie/controller/clouds/all", "sortie/provision/aws", "sortie/provision/gcp", "sortie/provision/kubernetes"}, cloudSDKs...),
		"the command you type starts in milliseconds: only the controller program links the cloud SDKs"},
	{"cmd/internal/cli/...", []string{"sortie/controller", "sortie/controller/store", "sortie/controller/service", "sortie/controller/clouds/all", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the CLI speaks the service's types only (the sortie program links the service in), never drives the reconcile loop, and links no cloud SDK"},
	{"schema", []string{"sortie/..."},
		"task files are read by every program; schema depends on nothing of sortie's"},
	{"strategy", []string{"sortie/controller", "sortie/controller/store", "sortie/controller/service", "sortie/controller/clouds/...", "sortie/provision/...", "sortie/cmd/..."},
		"decisions are pure functions of what the controller observed"},
	{"controller", []string{"sortie/controller/service", "sortie/cmd/...", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the loop reaches clouds through the registry, and the service sits above it"},
	{"controller/metrics", []string{"sortie/controller", "sortie/controller/store", "sortie/controller/service", "sortie/provision/...", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the registry is apart so that any process running a controller serves the same one"},
	{"controller/notify", []string{"sortie/controller/service", "sortie/cmd/...", "sortie/provision/...", "github.com/aws/...", "cloud.google.com/..."},
		"notifications read the store's outbox and nothing of the clouds"},
	{"controller/lifecycle", []string{"sortie/..."},
		"statuses and their moves are spelled once, below everything"},
	{"controller/schedule", []string{"sortie/..."},
		"scheduling knows jobs by their id only"},
	{"controller/store", []string{"sortie/controller", "sortie/controller/service", "sortie/provision/..."},
		"the store keeps state; it neither drives jobs nor reaches clouds"},
	{"controller/store/pgtest", []string{"sortie/..."},
		"a test server, usable by any package's tests"},
	{"controller/service", []string{"sortie/controller", "sortie/controller/clouds/all", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the verbs run in the CLI too, which links no cloud SDK"},
	{"controller/api", []string{"sortie/controller", "sortie/controller/clouds/all", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the API serves the service's verbs"},
	{"controller/api/dashboard/...", []string{"sortie/controller", "sortie/controller/store", "sortie/controller/service", "sortie/controller/clouds/all", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the dashboard acts through the service's verbs and speaks the service's types only"},
	{"controller/api/web", []string{"sortie/controller", "sortie/controller/store", "sortie/controller/service", "sortie/controller/clouds/...", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"what the API and the dashboard answer alike speaks the service's types only"},
	{"controller/api/client/...", []string{"sortie/controller", "sortie/controller/store", "sortie/controller/service", "sortie/controller/clouds/all", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the client is linked by the CLI and speaks the service's types only"},
	{"controller/config", []string{"sortie/controller", "sortie/controller/store", "sortie/controller/service", "sortie/controller/clouds/...", "sortie/provision/..."},
		"config.yaml is read by every program, before anything else is opened"},
	{"controller/clouds", []string{"github.com/aws/...", "cloud.google.com/...", "sortie/controller/clouds/all", "k8s.io/..."},
		"the registry without the SDKs is what the CLI links"},
	{"controller/clouds/all", []string{"sortie/controller"},
		"the whole registry maps config onto providers; the loop imports it, not the other way"},
	{"controller/prices", []string{"sortie/controller", "sortie/controller/service", "sortie/controller/clouds/...", "github.com/aws/...", "cloud.google.com/...", "k8s.io/..."},
		"the CLI reads the price cache through it; the clouds' fetchers are handed to it"},
	{"controller/daemon", []string{"sortie/controller", "sortie/provision/...", "github.com/aws/...", "net/http"},
		"starting and finding the controller process is linked by the CLI"},
	{"controller/profiling", []string{"sortie/..."},
		"profiles are the controller program's alone"},
	{"controller/home", []string{"sortie/..."},
		"the paths of a home are needed everywhere"},
	{"provision", []string{"sortie/controller/...", "sortie/strategy"},
		"providers know nothing of jobs or decisions"},
	{"provision/node", []string{"sortie/controller/..."},
		"running a task on a node knows nothing of jobs"},
	{"cmd/sortie-agent", []string{"sortie/controller/...", "sortie/provision", "sortie/schema", "github.com/...", "cloud.google.com/...", "golang.org/x/crypto/..."},
		"the agent is a small static program copied to every node"},
	{"provision/node/agent", []string{"sortie/controller/...", "sortie/provision", "sortie/schema", "net/http", "github.com/...", "cloud.google.com/..."},
		"the agent is a small static program copied to every node"},
	{"provision/node/notice", []string{"sortie/...", "net/http", "github.com/...", "cloud.google.com/..."},
		"the CLI links it; it has no HTTP client"},
	{"provision/node/notice/metadata", []string{"sortie/controller/...", "sortie/provision/node", "github.com/...", "cloud.google.com/..."},
		"only the agent's program asks the metadata services"},
	{"cmd/sortie-sync", []string{"sortie/controller/...", "sortie/schema"},
		"the sync program is copied to nodes and runs alone"},
	{"provision/bucket", []string{"sortie/controller/...", "sortie/schema"},
		"bucket syncing runs on nodes, in sortie-sync"},
	{"provision/local", []string{"sortie/controller/..."}, "a provider knows nothing of jobs"},
	{"provision/sim", []string{"sortie/controller/..."}, "a provider knows nothing of jobs"},
	{"provision/aws", []string{"sortie/controller/..."}, "a provider knows nothing of jobs"},
	{"provision/gcp", []string{"sortie/controller/..."}, "a provider knows nothing of jobs"},
	{"provision/kubernetes", []string{"sortie/controller/..."}, "a provider knows nothing of jobs"},
	{"provision/sshrun", []string{"sortie/controller/..."}, "a provider's part knows nothing of jobs"},
	{"provision/vm", []string{"sortie/controller/..."}, "a provider's part knows nothing of jobs"},
	{"provision/fit", []string{"sortie/controller/..."}, "a provider's part knows nothing of jobs"},
	{"provision/imagetag", []string{"sortie/...", "github.com/...", "cloud.google.com/...", "google.golang.org/...", "k8s.io/..."},
		"the image tags are data the CLI links, and each provider asks its own cloud"},
	{"provision/price", []string{"sortie/controller/...", "sortie/strategy", "github.com/aws/...", "cloud.google.com/..."},
		"the words for money link no SDK and know nothing of jobs"},
}

// TestLayout holds each package to importRules: none of what a package
// depends on, directly or not, may match what its rule bans.
func TestLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "sortie/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list sortie/...: %v\n%s", err, out)
	}
	all := strings.Fields(string(out))
	for _, r := range importRules {
		var pkgs []string
		for _, p := range all {
			if matchImport("sortie/"+r.pkg, p) {
				pkgs = append(pkgs, p)
			}
		}
		if len(pkgs) == 0 {
			t.Errorf("rule for %s: no such package", r.pkg)
			continue
		}
		for _, pkg := range pkgs {
			out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
			if err != nil {
				t.Errorf("go list -deps %s: %v\n%s", pkg, err, out)
				continue
			}
			for _, dep := range strings.Fields(string(out)) {
				if dep == pkg {
					continue
				}
				for _, ban := range r.banned {
					if matchImport(ban, dep) {
						t.Errorf("%s depends on %s, which it must not import (%s): %s", pkg, dep, ban, r.why)
					}
				}
			}
		}
	}
}

// matchImport says whether path is pattern, or under it when pattern ends
// in "/...".
func matchImport(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}
