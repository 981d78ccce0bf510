// Command playground runs AWS on this machine, so that sortie's AWS provider
// can be tried without an account (make aws-playground): the moto EC2
// emulator, the fault-injecting proxy the tests put in front of it, and a
// private sshd playing every instance, all on 127.0.0.1, as the provider's
// tests start them (provision/internal/testenv). It writes a sortie home
// whose config.yaml is wired to them, prints the lines to paste into a
// shell, and serves a control port where an instance is taken away as EC2
// takes back a spot instance:
//
//	curl -X POST "$SORTIE_PLAYGROUND/interrupt?job=N"
//
// takes node 0 of job N (node=RANK another, instance=ID one by its id):
// the next DescribeInstances reports the instance terminated with the
// state reason Server.SpotInstanceTermination, and its task's processes
// die, as they would with the VM. The control port also answers the node
// agents' instance metadata questions (no notice, ever), so that the agents
// never ask this machine's own.
//
// Everything lives in one folder (-dir, else a temporary one removed at
// the end): the home, the instances' node folders and the home the sshd
// gives them, moto's log. The machine's ~/.ssh and ~/.aws are not used:
// the sshd has its own keys and authorized_keys, sets HOME to its own
// folder and runs no ~/.ssh/rc, and the printed lines point the AWS SDK at
// no file. It runs until SIGINT or SIGTERM (Ctrl-C), then stops the home's
// controller and everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"sortie/provision"
	"sortie/provision/internal/testenv"
	"sortie/provision/sshrun"
)

// region is the one region the playground's config enables.
const region = "us-east-1"

func main() {
	dir := flag.String("dir", "", "the folder to keep the home, the nodes and the emulators' files in (default: a temporary one, removed at the end)")
	port := flag.Int("port", 0, "the control port on 127.0.0.1 (default: a free one)")
	sortie := flag.String("sortie", "sortie", "the sortie CLI, run to stop the home's controller at the end")
	flag.Parse()
	p := &playground{}
	if *dir == "" {
		d, err := os.MkdirTemp("", "sortie-aws-playground-")
		if err != nil {
			p.Fatal(err)
		}
		p.Cleanup(func() { os.RemoveAll(d) })
		*dir = d
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		p.Fatal(err)
	}
	if err := checkDir(abs); err != nil {
		p.Fatal(err)
	}
	p.dir = abs
	if err := os.MkdirAll(abs, 0o755); err != nil {
		p.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, p, *port, *sortie); err != nil {
		p.Fatal(err)
	}
	p.stop()
}

// checkDir refuses a folder whose path the printed shell lines and the SSH
// proxy command could not hold as it is.
func checkDir(dir string) error {
	if strings.ContainsAny(dir, " \t\n'\"\\$`;&|<>*?") {
		return fmt.Errorf("-dir %q: the path must have no spaces, quotes or shell characters, as the printed lines and the SSH proxy command hold it; give another folder", dir)
	}
	return nil
}

// run starts the stand-ins, writes the home, prints how to use them and
// serves the control port until ctx ends.
func run(ctx context.Context, p *playground, port int, sortie string) error {
	home := filepath.Join(p.dir, "home")
	nodes := filepath.Join(p.dir, "nodes")
	if err := os.MkdirAll(nodes, 0o755); err != nil {
		return err
	}
	// The home holds the SSH key the instances accept.
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	moto := testenv.StartMoto(p)
	proxy := testenv.StartEC2Proxy(p, moto.URL)
	sshd := testenv.StartNodeSSHD(p, home, nodes, sshrun.LoadOrCreateKey)

	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fmt.Errorf("-port %d: %w; give another port, or -port 0 for a free one", port, err)
	}
	control := "http://" + l.Addr().String()
	config := fmt.Sprintf(`# Written by the AWS playground: EC2 is moto behind its fault proxy, and
# every instance is the private sshd, reached through proxy_command.
aws:
  regions: [%s]
  endpoint: %s
  ssh_user: %s
  node_dir: %s
  imds_endpoint: %s
  poll_interval: 1s
ssh:
  proxy_command: %q
`, region, proxy.URL, sshd.User, nodes, control, sshd.ProxyCommand)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
		return err
	}
	// Registered last, so run first: the controller stops before what it
	// talks to.
	p.Cleanup(func() { stopController(sortie, home) })

	srv := &http.Server{Handler: handler(proxy, moto.URL, nodes)}
	go srv.Serve(l)
	defer srv.Close()

	fmt.Printf(`AWS playground: EC2 (moto) at %s behind the fault proxy %s, instances played by sshd on %s.
Paste into the shell you run sortie in:

export SORTIE_HOME=%s SORTIE_PLAYGROUND=%s
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true
export AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_CONFIG_FILE=/dev/null
export AWS_ENDPOINT_URL_S3=%s AWS_ENDPOINT_URL_IAM=%s
unset AWS_PROFILE AWS_SESSION_TOKEN

Take node 0 of job N away as EC2 takes back a spot instance (or instance=i-...):
  curl -X POST "$SORTIE_PLAYGROUND/interrupt?job=N"
Ctrl-C stops the playground.
`, moto.URL, proxy.URL, sshd.Addr, home, control, moto.URL, proxy.URL)
	<-ctx.Done()
	fmt.Println("stopping the AWS playground")
	return nil
}

// handler serves the control port: POST /interrupt, and the instance
// metadata service's answers when no notice is pending (a token, then 404).
func handler(proxy *testenv.EC2Proxy, moto, nodes string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /interrupt", func(w http.ResponseWriter, r *http.Request) {
		id, err := instance(r.Context(), moto, r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := proxy.SpotInterrupt(r.Context(), region, id); err != nil {
			http.Error(w, fmt.Sprintf("interrupt %s: %v", id, err), http.StatusBadRequest)
			return
		}
		killed := testenv.KillNodeProcesses(filepath.Join(nodes, id))
		fmt.Fprintf(w, "%s interrupted: EC2 reports it terminated, state reason Server.SpotInstanceTermination; %d of its processes killed\n", id, killed)
	})
	mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "playground")
	})
	return mux
}

var instanceID = regexp.MustCompile(`^i-[0-9a-f]+$`)

// instance is the instance an interrupt names: instance=ID, or job=N (and
// node=RANK, default 0) for that node's running instance.
func instance(ctx context.Context, moto string, q url.Values) (string, error) {
	if id := q.Get("instance"); id != "" || q.Get("job") == "" {
		if !instanceID.MatchString(id) {
			return "", fmt.Errorf("instance=%q is not an instance id: give job=N (and node=RANK), or instance=i-... from sortie jobs show N -o json", id)
		}
		return id, nil
	}
	job, node := q.Get("job"), q.Get("node")
	if node == "" {
		node = "0"
	}
	body, err := testenv.Call(ctx, moto, region, "DescribeInstances", map[string]string{
		"Filter.1.Name": "tag:" + provision.TagJob, "Filter.1.Value.1": job,
		"Filter.2.Name": "tag:" + provision.TagRank, "Filter.2.Value.1": node,
		"Filter.3.Name": "instance-state-name", "Filter.3.Value.1": "running",
	})
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`<instanceId>(i-[0-9a-f]+)</instanceId>`).FindSubmatch(body)
	if m == nil {
		return "", fmt.Errorf("job=%s node=%s: no running instance; sortie jobs show %s says where the job is", job, node, job)
	}
	return string(m[1]), nil
}

// stopController stops the controller of home, if one runs: it would
// otherwise go on asking the stopped emulator about its jobs.
func stopController(sortie, home string) {
	cmd := exec.Command(sortie, "controller", "stop")
	cmd.Env = append(os.Environ(), "SORTIE_HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "stop the controller of %s with %s: %v %s\n", home, sortie, err, out)
	}
}

// playground stands in for a test where testenv wants one: a failure stops
// everything started so far and exits, cleanups run last first, and
// temporary folders are made in the playground's folder.
type playground struct {
	dir      string
	cleanups []func()
}

func (p *playground) Helper()                      {}
func (p *playground) Cleanup(f func())             { p.cleanups = append(p.cleanups, f) }
func (p *playground) Fatal(args ...any)            { p.fail(fmt.Sprint(args...)) }
func (p *playground) Fatalf(f string, args ...any) { p.fail(fmt.Sprintf(f, args...)) }
func (p *playground) Skipf(f string, args ...any)  { p.fail(fmt.Sprintf(f, args...)) }

func (p *playground) TempDir() string {
	d, err := os.MkdirTemp(p.dir, "run-")
	if err != nil {
		p.Fatal(err)
	}
	return d
}

func (p *playground) fail(msg string) {
	fmt.Fprintln(os.Stderr, "aws playground:", msg)
	p.stop()
	os.Exit(1)
}

func (p *playground) stop() {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	p.cleanups = nil
}

var _ testenv.TB = (*playground)(nil)
