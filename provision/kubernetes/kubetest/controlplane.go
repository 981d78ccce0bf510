// Package kubetest runs a real Kubernetes control plane for tests: etcd and
// kube-apiserver, built from the Go module proxy by build-control-plane.sh
// (make kube-control-plane), started on 127.0.0.1 with a static admin
// token. No kubelet, scheduler or controller-manager runs: Kubelet plays
// the parts of them a test needs through the same API they use (binding a
// pod to a node, the pod status subresource, a node's kubelet endpoint for
// logs).
package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Versions of the programs the control plane runs; the cache folder is
// named after KubeVersion.
const (
	EtcdVersion = "v3.7.3"
	KubeVersion = "v1.37.2"
)

// BinDirEnv overrides the folder holding etcd and kube-apiserver.
const BinDirEnv = "SORTIE_KUBE_BIN_DIR"

// BinDir is where build-control-plane.sh puts the programs: $SORTIE_KUBE_BIN_DIR,
// else $XDG_CACHE_HOME/sortie/kube-VERSION, else ~/.cache/sortie/kube-VERSION.
func BinDir() string {
	if d := os.Getenv(BinDirEnv); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "sortie", "kube-"+KubeVersion)
}

// checkStamp refuses a kube-apiserver in bin that does not say it is
// KubeVersion: one built before build-control-plane.sh stamped the
// version answers /version with a v0.0.0 placeholder.
func checkStamp(bin string) error {
	out, err := exec.Command(filepath.Join(bin, "kube-apiserver"), "--version").Output()
	if err != nil {
		return fmt.Errorf("kube-apiserver in %s --version: %w; run `make kube-control-plane`, which builds it again", bin, err)
	}
	if got := strings.TrimSpace(string(out)); got != "Kubernetes "+KubeVersion {
		return fmt.Errorf("kube-apiserver in %s says %q to --version, not \"Kubernetes %s\": it was built without the version stamp; run `make kube-control-plane`, which builds it again",
			bin, got, KubeVersion)
	}
	return nil
}

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Config reaches the apiserver as an admin (system:masters).
	Config *rest.Config
	// Client is a clientset over Config.
	Client kubernetes.Interface
	// URL is the apiserver's https address; Token the admin's bearer token.
	URL, Token string
	// UserToken is the bearer token of User, who belongs to no group: it
	// may do only what a test grants it through RBAC.
	UserToken string

	dir            string
	etcd, apiserve *exec.Cmd
	waits          map[*exec.Cmd]chan error
	stopOnce       sync.Once
	nsSeq          atomic.Int64
}

// Start starts etcd, then the apiserver, and returns once the apiserver
// answers /readyz. The programs are killed if the test binary dies (parent
// death signal); Stop stops them in order.
func Start(ctx context.Context) (*ControlPlane, error) {
	bin := BinDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, fmt.Errorf("%s is missing from %s: run `make kube-control-plane` (it builds etcd %s and kube-apiserver %s there, about 10 minutes the first time) or set %s",
				name, bin, EtcdVersion, KubeVersion, BinDirEnv)
		}
	}
	if err := checkStamp(bin); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sortie-kube-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{dir: dir, waits: map[*exec.Cmd]chan error{}}
	if err := cp.start(ctx, bin); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) start(ctx context.Context, bin string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cp.etcd, err = cp.run(filepath.Join(bin, "etcd"), "etcd.log",
		"--data-dir", filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "default="+peerURL,
		"--unsafe-no-fsync", "--log-level", "error")
	if err != nil {
		return err
	}
	if err := cp.waitFor(ctx, cp.etcd, "etcd", func() bool { return healthy(clientURL + "/health") }); err != nil {
		return err
	}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyFile := filepath.Join(cp.dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	if cp.Token, err = token(); err != nil {
		return err
	}
	if cp.UserToken, err = token(); err != nil {
		return err
	}
	tokenFile := filepath.Join(cp.dir, "tokens.csv")
	tokens := cp.Token + `,admin,admin,"system:masters"` + "\n" + cp.UserToken + "," + User + "," + User + "\n"
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		return err
	}
	cp.URL = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	cp.apiserve, err = cp.run(filepath.Join(bin, "kube-apiserver"), "kube-apiserver.log",
		"--etcd-servers", clientURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[2]), "--cert-dir", filepath.Join(cp.dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", keyFile, "--service-account-signing-key-file", keyFile,
		"--token-auth-file", tokenFile, "--authorization-mode", "RBAC",
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--disable-admission-plugins", "ServiceAccount",
		"--endpoint-reconciler-type", "none")
	if err != nil {
		return err
	}
	cp.Config = &rest.Config{Host: cp.URL, BearerToken: cp.Token, TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS: 200, Burst: 400}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	return cp.waitFor(ctx, cp.apiserve, "kube-apiserver", func() bool {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error() == nil
	})
}

// run starts one program with its output in a log file of the folder.
func (cp *ControlPlane) run(path, logName string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(cp.dir, logName))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); log.Close() }()
	cp.waits[cmd] = done
	return cmd, nil
}

// waitFor polls ready for up to a minute, and fails early with the
// program's log when it exits.
func (cp *ControlPlane) waitFor(ctx context.Context, cmd *exec.Cmd, name string, ready func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for !ready() {
		select {
		case err := <-cp.waits[cmd]:
			cp.waits[cmd] <- err
			return fmt.Errorf("%s exited (%v) before it was ready: %s", name, err, cp.tail(name+".log"))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w: %s", name, ctx.Err(), cp.tail(name+".log"))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func (cp *ControlPlane) tail(logName string) string {
	b, _ := os.ReadFile(filepath.Join(cp.dir, logName))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// Stop stops the apiserver, then etcd (stopped together, the apiserver can
// hang for minutes on its lost storage), and removes their folder.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		for _, cmd := range []*exec.Cmd{cp.apiserve, cp.etcd} {
			if cmd == nil || cmd.Process == nil {
				continue
			}
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-cp.waits[cmd]:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-cp.waits[cmd]
			}
		}
		os.RemoveAll(cp.dir)
	})
}

// Namespace creates a namespace of its own for one test. Namespaces are
// never deleted: no controller-manager runs to finish their deletion.
func (cp *ControlPlane) Namespace(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d-%d", os.Getpid(), cp.nsSeq.Add(1))
	_, err := cp.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// User is the name of the user whose token is UserToken.
const User = "sortie-test-user"

func token() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Kubeconfig writes a kubeconfig file to path whose contexts (each named
// in contexts, with namespace ns) reach the apiserver with bearer token.
func (cp *ControlPlane) Kubeconfig(path, token, ns string, contexts ...string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: cp.URL, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: token}
	for _, c := range contexts {
		cfg.Contexts[c] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: ns}
	}
	if len(contexts) > 0 {
		cfg.CurrentContext = contexts[0]
	}
	return clientcmd.WriteToFile(*cfg, path)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// healthy reports whether url answers 200.
func healthy(url string) bool {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Main starts a control plane for a test binary, sets it in *cp, runs
// the tests and stops it. A control plane that cannot start fails the run.
// With -short (make unit) it starts none, and the tests that need one
// skip (Need).
func Main(m *testing.M, cp **ControlPlane) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	started, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubetest:", err)
		return 1
	}
	*cp = started
	defer started.Stop()
	return m.Run()
}

// Need returns cp, or skips t when there is none because of -short.
func Need(t testing.TB, cp *ControlPlane) *ControlPlane {
	t.Helper()
	if cp == nil && testing.Short() {
		t.Skip("needs etcd and kube-apiserver, which -short (make unit) does not start; make test runs them")
	}
	return cp
}
