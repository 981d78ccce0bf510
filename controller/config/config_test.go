package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	sortiehome "sortie/controller/home"
)

func load(t *testing.T, yaml string, env map[string]string) (Config, error) {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(sortiehome.Config(home), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(home, func(k string) string { return env[k] })
}

func TestConfigErrorsNameTheKeyAndTheLine(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		env  map[string]string
		want []string // parts of the error, each
	}{
		{"controller:\n  poll_interval: 1ns\n", nil,
			[]string{"config.yaml line 2: controller.poll_interval: 1ns is out of range; give a duration from 50ms to 1h, or leave it out for 5s"}},
		{"controller:\n  poll_interval: 2h\n", nil, []string{"line 2: controller.poll_interval: 2h0m0s is out of range"}},
		{"controller:\n  poll_interval: -5s\n", nil, []string{"line 2: controller.poll_interval: -5s is out of range"}},
		{"controller:\n  poll_interval: 1e300\n", nil, []string{`line 2: controller.poll_interval: "1e300" is not a duration`}},
		{"controller:\n  poll_interval: .nan\n", nil, []string{`line 2: controller.poll_interval: ".nan" is not a duration`}},
		{"controller:\n  poll_interval: abc\n", nil, []string{`line 2: controller.poll_interval: "abc" is not a duration (e.g. 5s, 1m30s, 30d)`}},
		{"controller:\n  pol_interval: 5s\n", nil, []string{`line 2: controller.pol_interval: unknown field; did you mean "poll_interval"?`}},
		{"controler:\n  poll_interval: 5s\n", nil, []string{`line 1: controler: unknown field; did you mean "controller"?`}},
		{"controller: [1, 2]\n", nil, []string{"line 1: controller: a list is not a mapping of keys"}},
		{"controller:\n  max_parallel_launches: many\n", nil, []string{`line 2: controller.max_parallel_launches: "many" is not a whole number`}},
		{"controller:\n  max_parallel_launches: 99999999999999\n", nil, []string{`controller.max_parallel_launches: "99999999999999" is not a whole number`}},
		{"controller:\n  launch_rounds: -1\n", nil, []string{"line 2: controller.launch_rounds: -1 is out of range; give a number from 1 to 1000"}},
		{"controller:\n  poll_interval: 5s\n  poll_interval: 6s\n", nil, []string{`line 3: invalid YAML: key "poll_interval" is given twice in the same mapping; keep one`}},
		{"local:\n  regions:\n  - name: r\n    zones: a\n", nil, []string{"line 4: local.regions[0].zones: \"a\" is not a list"}},
		{"sim:\n  preempt_rate: 1.5\n  exit_codes:\n  - {code: 300, share: 0.5}\n", nil,
			[]string{"line 2: sim.preempt_rate: 1.5 is out of range", "line 4: sim.exit_codes[0].code: 300 is out of range; give a number from 0 to 255"}},
		{"controller:\n  poll_interval: 5s\n---\ncontroller: {}\n", nil, []string{"config.yaml line 3: invalid YAML: a second document (after ---)"}},
		{"controller:\n  poll_interval: [5s\n", nil, []string{"config.yaml line 2: invalid YAML: did not find expected ',' or ']'"}},
		{"controller:\n  log_retention: 30m\n", nil, []string{"line 2: controller.log_retention: 30m0s is out of range; give a duration from 1h to 87600h, or leave it out for 30d"}},
		{"controller:\n  log_retention: forever\n", nil, []string{`line 2: controller.log_retention: "forever" is not a duration (e.g. 5s, 1m30s, 30d)`}},
		{"controller:\n  log_max_bytes_per_attempt: 1KiB\n", nil, []string{"line 2: controller.log_max_bytes_per_attempt: 1KiB is out of range; give a size from 1MiB to 1TiB, or leave it out for 1GiB"}},
		{"controller:\n  log_max_bytes_per_attempt: lots\n", nil, []string{`line 2: controller.log_max_bytes_per_attempt: "lots" is not a size; write bytes or a size such as 512MiB or 1GiB`}},
		{"notify:\n  webhooks:\n  - url: ftp://x/y\n    events: [status, sucess]\n    secret: ops\n", nil, []string{
			`line 3: notify.webhooks[0].url: "ftp://x/y" is not an http or https address`,
			`line 4: notify.webhooks[0].events[1]: "sucess" is not an event; expected one of status, recovery, failed, succeeded`,
			`line 5: notify.webhooks[0].secret: "ops" names no key; add notify.secrets.ops`}},
		{"notify:\n  secrets:\n    ops: hunter2\n", nil, []string{"line 3: notify.secrets.ops: is shorter than 16 characters"}},
		{"notify:\n  secrets:\n    ops: [hunter2]\n", nil, []string{"line 3: notify.secrets.ops: a list is not a string"}},
		{"notify:\n  webhooks:\n  - {url: https://h.example.com/x, secret: ops}\n  secrets:\n    ops: 0123456789abcdef0123\n", nil, nil},
		{"", map[string]string{"SORTIE_POLL_INTERVAL": "1ns"}, []string{"environment variable SORTIE_POLL_INTERVAL: 1ns is out of range"}},
		{"controller:\n  poll_interval: 1ns\n", map[string]string{"SORTIE_POLL_INTERVAL": "1s"}, nil},
		{"controller:\n  max_keep_on_failure: 60d\n", nil, []string{"line 2: controller.max_keep_on_failure: 1440h0m0s is out of range"}},
		{"controller:\n  max_keep_on_failure: soon\n", nil, []string{`line 2: controller.max_keep_on_failure: "soon" is not a duration`}},
		{"controller:\n  max_keep_on_failure: 1000h\n", nil,
			[]string{"line 2: controller.max_keep_on_failure: 1000h0m0s is out of range; give a duration from 1s to 720h, or leave it out for 24h"}},
		{"", map[string]string{"SORTIE_LAUNCH_ROUNDS": "x"}, []string{`environment variable SORTIE_LAUNCH_ROUNDS: "x" is not a whole number`}},
		{"controller:\n  metrics_listen: 9090\n", nil, []string{`line 2: controller.metrics_listen: "9090" is not host:port; give an address such as 127.0.0.1:9090`}},
		{"controller:\n  metrics_listen: localhost:http\n", nil, []string{`line 2: controller.metrics_listen: "localhost:http": the port "http" is not a number from 0 to 65535`}},
		{"controller:\n  metrics_listen: 127.0.0.1:70000\n", nil, []string{`controller.metrics_listen: "127.0.0.1:70000": the port "70000" is not a number`}},
		{"controller:\n  metrics_listen: 127.0.0.1:9090\n", nil, nil},
		{"controller:\n  metrics_listen: :9090\n", nil, nil},
		{"aws:\n  imds_endpoint: 169.254.169.254\n", nil,
			[]string{`line 2: aws.imds_endpoint: "169.254.169.254" is not a base URL; give http://HOST[:PORT] (no path), or leave it out for EC2's own, http://169.254.169.254`}},
		{"gcp:\n  metadata_endpoint: http://h/computeMetadata/v1\n", nil,
			[]string{`line 2: gcp.metadata_endpoint: "http://h/computeMetadata/v1" is not a base URL`}},
		{"aws:\n  imds_endpoint: http://127.0.0.1:1338\ngcp:\n  metadata_endpoint: https://meta:8080/\n", nil, nil},
		{"kubernetes:\n  provision_timeout: 100ms\n", nil,
			[]string{"line 2: kubernetes.provision_timeout: 100ms is out of range; give a duration from 1s to 24h, or leave it out for 10s"}},
		{"kubernetes:\n  spot_tolerations:\n  - {key: spot, operator: Equals, effect: NoSchedul}\n  - {operator: Exists, value: x}\n  - {effect: NoExecute}\n", nil, []string{
			`line 3: kubernetes.spot_tolerations[0].operator: "Equals" is not a toleration operator; use Equal or Exists`,
			`line 3: kubernetes.spot_tolerations[0].effect: "NoSchedul" is not a taint effect`,
			`line 4: kubernetes.spot_tolerations[1].value: "x": a toleration with operator Exists has no value`,
			`line 5: kubernetes.spot_tolerations[2].key: empty; name the taint's key`}},
		{"kubernetes:\n  nodes: [a]\n", nil, []string{"line 2: kubernetes.nodes: unknown field; expected one of accelerator_label, allowed_contexts,"}},
		{"a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n", nil,
			[]string{"invalid YAML: the document expands to more than 100000 values; use fewer aliases"}},
		{"ssh: &s {proxy_command: x}\naws:\n  <<: *s\n", nil, []string{"line 1: aws.proxy_command: unknown field; expected one of endpoint,"}},
		{"kubernetes:\n  contxt: prod\n", nil, []string{`line 2: kubernetes.contxt: unknown field; did you mean "context"?`}},
		{"kubernetes:\n  spot_tolerations:\n  - {key: cloud.google.com/gke-spot, operator: Equal, value: \"true\", effect: NoSchedule}\n  - {operator: Exists}\n", nil, nil},
		{"kubernetes:\n  shared_gpus:\n    A100: {resource: nvidia.com/gpu.shared, per_gpu: 2}\n    H100: {resource: nvidia.com/mig-3g.40gb, per_gpu: 2}\n", nil, nil},
		{"kubernetes:\n  shared_gpus:\n    A100: {resource: gpu shared, per_gpu: 0}\n", nil, []string{
			`kubernetes.shared_gpus.A100.resource: "gpu shared" is not a resource name; give the cluster's shared GPU resource, e.g. nvidia.com/gpu.shared`,
			`kubernetes.shared_gpus.A100.per_gpu: 0 is not a count; give how many units of the resource one GPU is, 1 or more`}},
		{"controller:\n  store: postgres://sortie:pw@db:5432/sortie\n", nil, nil},
		{"controller:\n  store: sqlite:/var/lib/sortie/state.db\n", nil, nil},
		{"controller:\n  store: state.db\n", nil,
			[]string{`line 2: controller.store: "state.db" is not an absolute path; give postgres://USER:PASSWORD@HOST:PORT/DATABASE, sqlite:/ABSOLUTE/PATH, or leave it out for $SORTIE_HOME/state.db`}},
		{"controller:\n  store: mysql://db/sortie\n", nil, []string{`line 2: controller.store: "mysql://db/sortie" is not a store sortie knows`}},
		{"", map[string]string{"SORTIE_STORE": "postgres://sortie:hunter2@db:bad port/x"}, []string{"environment variable SORTIE_STORE: the PostgreSQL URL does not parse"}},
		{"controller:\n  store: /a/state.db\n", map[string]string{"SORTIE_STORE": "postgresql://db/sortie"}, nil},
	} {
		_, err := load(t, tc.yaml, tc.env)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%q with %v: %v", tc.yaml, tc.env, err)
			}
			continue
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%q: %v, want a *config.Error", tc.yaml, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q:\n got %v\nwant %q in it", tc.yaml, err, w)
			}
		}
		for _, internal := range []string{"unmarshal", "JSON", "reflect", "config.Duration", "ControllerConfig"} {
			if strings.Contains(err.Error(), internal) {
				t.Errorf("%q: the error shows the internal %q: %v", tc.yaml, internal, err)
			}
		}
	}
}

func TestConfigKeepsWhatItReads(t *testing.T) {
	cfg, err := load(t, `
controller:
  poll_interval: 250ms
  max_parallel_launches: 4
  restart_backoff_initial: 2   # seconds
local:
  regions:
  - {name: r1, zones: [a, b]}
aws:
  regions: [us-east-1]
  poll_interval: 20ms
  imds_endpoint: http://127.0.0.1:1338
gcp:
  metadata_endpoint: http://127.0.0.1:8080
kubernetes:
  context: prod
  allowed_contexts: [prod, backup]
  namespace: ml
  allowed_namespaces: [ml, ml-spare]
  image: python:3.12
  provision_timeout: 30s
  spot_node_selector: {cloud.google.com/gke-spot: "true"}
  spot_tolerations: [{key: cloud.google.com/gke-spot, operator: Equal, value: "true", effect: NoSchedule}]
  accelerator_label: cloud.google.com/gke-accelerator
ssh:
  proxy_command: 'nc %h %p'
sim:
  seed: 18446744073709551615
  preempt_rate: 0.25
  exit_codes: [{code: 29, share: 0.5, attempt: 1}]
  decision_log: ~
notify:
  webhooks:
  - {url: https://hooks.example.com/a, events: [Status], secret: ops}
  - {url: https://hooks.example.com/b}
  secrets:
    ops: 0123456789abcdef0123
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Controller
	if c.PollInterval.D() != 250*time.Millisecond || c.MaxParallelLaunches != 4 || c.RestartBackoffInitial.D() != 2*time.Second {
		t.Errorf("controller: %+v", c)
	}
	if len(cfg.Local.Regions) != 1 || cfg.Local.Regions[0].Zones[1] != "b" || cfg.AWS.Regions[0] != "us-east-1" || cfg.AWS.PollInterval.D() != 20*time.Millisecond {
		t.Errorf("local %+v aws %+v", cfg.Local, cfg.AWS)
	}
	if cfg.SSH.ProxyCommand != "nc %h %p" || cfg.Sim.Seed != 18446744073709551615 || cfg.Sim.PreemptRate != 0.25 || cfg.Sim.ExitCodes[0] != (SimExitRule{29, 0.5, 1}) {
		t.Errorf("ssh %+v sim %+v", cfg.SSH, cfg.Sim)
	}
	if cfg.AWS.IMDSEndpoint != "http://127.0.0.1:1338" || cfg.GCP.MetadataEndpoint != "http://127.0.0.1:8080" {
		t.Errorf("metadata endpoints: aws %q gcp %q", cfg.AWS.IMDSEndpoint, cfg.GCP.MetadataEndpoint)
	}
	k := cfg.Kubernetes
	if k.Context != "prod" || strings.Join(k.AllowedContexts, ",") != "prod,backup" || k.Namespace != "ml" ||
		strings.Join(k.AllowedNamespaces, ",") != "ml,ml-spare" || k.Image != "python:3.12" || k.ProvisionTimeout.D() != 30*time.Second ||
		k.SpotNodeSelector["cloud.google.com/gke-spot"] != "true" || k.AcceleratorLabel != "cloud.google.com/gke-accelerator" ||
		len(k.SpotTolerations) != 1 || k.SpotTolerations[0] != (KubernetesToleration{"cloud.google.com/gke-spot", "Equal", "true", "NoSchedule"}) {
		t.Errorf("kubernetes: %+v", k)
	}
	// Left out, or zero: the defaults.
	if c.LaunchRounds != 5 || c.UnreachableChecks != 12 || c.LogRetention.D() != 30*24*time.Hour || c.LogMaxBytesPerAttempt != 1<<30 ||
		c.MaxKeepOnFailure.D() != 24*time.Hour {
		t.Errorf("defaults: %+v", c)
	}
	// A webhook's events are lower-cased, or the default ones.
	hooks := cfg.Notify.Webhooks
	if len(hooks) != 2 || hooks[0].Secret != "ops" || strings.Join(hooks[0].Events, ",") != "status" ||
		strings.Join(hooks[1].Events, ",") != "recovery,failed,succeeded" || cfg.Notify.Secrets["ops"] != "0123456789abcdef0123" {
		t.Errorf("notify: %+v", cfg.Notify)
	}
}

func TestLogKeysTakeDaysAndSizes(t *testing.T) {
	cfg, err := load(t, "controller:\n  log_retention: 7d\n  log_max_bytes_per_attempt: 64MiB\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Controller.LogRetention.D(); got != 7*24*time.Hour {
		t.Errorf("log_retention 7d = %s", got)
	}
	if got := cfg.Controller.LogMaxBytesPerAttempt; got != 64<<20 {
		t.Errorf("log_max_bytes_per_attempt 64MiB = %d", got)
	}
	for in, want := range map[string]ByteSize{"1073741824": 1 << 30, "500MB": 500e6, "2 GiB": 2 << 30, "10KiB": 10 << 10} {
		if got, err := ParseByteSize(in); err != nil || got != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

// A signing key is never shown, whatever is wrong around it.
func TestSigningKeysAreNeverShown(t *testing.T) {
	_, err := load(t, "notify:\n  secrets:\n    ops: short-key\n    ops: 0123456789abcdef-second\n  webhooks:\n  - {url: https://h.example.com/x, secret: nokey}\n", nil)
	if err == nil {
		t.Fatal("a short and a repeated key were accepted")
	}
	for _, v := range []string{"short-key", "0123456789abcdef-second"} {
		if strings.Contains(err.Error(), v) {
			t.Errorf("the error shows a signing key: %v", err)
		}
	}
	if !strings.Contains(err.Error(), `line 4: invalid YAML: key "ops" is given twice`) {
		t.Errorf("no word of the repeated key: %v", err)
	}
}

func TestConfigThatIsNoRegularFileIsRefused(t *testing.T) {
	home := t.TempDir()
	if err := syscall.Mkfifo(sortiehome.Config(home), 0o600); err != nil {
		t.Skip(err)
	}
	_, err := Load(home, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "a named pipe (FIFO), not a regular file") {
		t.Errorf("config.yaml a FIFO: %v", err)
	}
	big := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(big, []byte(strings.Repeat("#", 2<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(filepath.Dir(big), func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a 2 MiB config.yaml: %v", err)
	}
}

// The store is the home's state.db unless controller.store or
// SORTIE_STORE names another; a bad one is refused without quoting a
// password.
func TestStoreURL(t *testing.T) {
	cfg, err := load(t, "", nil)
	if err != nil || cfg.StoreURL() != sortiehome.State(cfg.Home) {
		t.Errorf("no store given: %q %v, want the home's state.db", cfg.StoreURL(), err)
	}
	cfg, err = load(t, "controller:\n  store: sqlite:/srv/a.db\n", map[string]string{"SORTIE_STORE": "postgres://sortie@db/sortie"})
	if err != nil || cfg.StoreURL() != "postgres://sortie@db/sortie" {
		t.Errorf("SORTIE_STORE over config.yaml: %q %v", cfg.StoreURL(), err)
	}
	_, err = load(t, "", map[string]string{"SORTIE_STORE": "postgres://sortie:hunter2@db:bad/x"})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a bad URL's error: %v", err)
	}
}

// Problems are told in the file's order, not in the order of the keys' names.
func TestConfigProblemsComeInTheFilesOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	text := "sim:\n  preempt_rate: 1.5\ncontroller:\n  poll_interval: 1ns\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir, func(string) string { return "" })
	if err == nil {
		t.Fatal("config.yaml with two bad values loaded")
	}
	msg := err.Error()
	sim, ctl := strings.Index(msg, "sim.preempt_rate"), strings.Index(msg, "controller.poll_interval")
	if sim < 0 || ctl < 0 || sim > ctl {
		t.Errorf("want line 2's problem before line 4's, got:\n%s", msg)
	}
}

func TestLocalSandboxModes(t *testing.T) {
	for _, tc := range []struct{ file, env, want, problem string }{
		{"", "", "", ""},
		{"local:\n  sandbox: off\n", "", "off", ""},
		{"local:\n  sandbox: on\n", "", "on", ""},
		{"local:\n  sandbox: auto\n", "", "auto", ""},
		{"local:\n  sandbox: \"off\"\n", "", "off", ""},
		{"local:\n  sandbox: maybe\n", "", "", `config.yaml line 2: local.sandbox: "maybe" is not a sandbox mode; use on, off or auto`},
		{"", "off", "off", ""},
		{"", "nope", "", `SORTIE_LOCAL_SANDBOX: "nope" is not a sandbox mode; use on, off or auto`},
	} {
		h := t.TempDir()
		if tc.file != "" {
			if err := os.WriteFile(filepath.Join(h, "config.yaml"), []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Load(h, func(k string) string {
			if k == "SORTIE_LOCAL_SANDBOX" {
				return tc.env
			}
			return ""
		})
		if tc.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("%q %q: error %v, want %q", tc.file, tc.env, err, tc.problem)
			}
			continue
		}
		if err != nil || cfg.Local.Sandbox != tc.want {
			t.Errorf("%q %q: sandbox %q, %v; want %q", tc.file, tc.env, cfg.Local.Sandbox, err, tc.want)
		}
	}
}
