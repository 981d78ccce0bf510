package kubetest

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// ServeProcesses runs the node's kubelet, and the scheduler, for every pod
// of namespace ns until ctx ends, running each pod's one container as a
// process of this machine under dir:
//
//   - a new pod is bound and Running (pod IP 10.2.X.Y), or Unschedulable
//     while the namespace is Full;
//   - its container's command runs with the container's env, each volume
//     mount's path (and the termination message path) in the command
//     replaced by a folder of dir: a ConfigMap or Secret volume holds the
//     object's keys, refreshed all at once as the object changes (as the
//     kubelet's atomic writer does); an emptyDir is an empty folder;
//   - its output is the container's log (the pod log API reads it); its
//     exit ends the container with its code (128+N for signal N) and the
//     termination message file's text;
//   - a pod being deleted (by sortie, the eviction API, a drain) has its
//     process group sent SIGTERM, SIGKILL after the grace period, and is
//     then deleted.
//
// Every process is killed when ctx ends.
func (k *Kubelet) ServeProcesses(ctx context.Context, ns, dir string) error {
	s := &procServer{k: k, ns: ns, dir: dir, procs: map[string]*podProc{}}
	defer s.killAll()
	return k.servePods(ctx, ns, "10.2", func(p *corev1.Pod) error {
		go s.delete(ctx, p)
		return nil
	}, func(p *corev1.Pod) error { return s.start(ctx, p) })
}

type procServer struct {
	k   *Kubelet
	ns  string
	dir string

	mu    sync.Mutex
	procs map[string]*podProc // by pod name
}

// podProc is one pod's container process.
type podProc struct {
	cmd      *exec.Cmd
	done     chan struct{}
	stopOnce sync.Once
}

// start runs pod's container.
func (s *procServer) start(ctx context.Context, pod *corev1.Pod) error {
	if len(pod.Spec.Containers) != 1 {
		return fmt.Errorf("pod %s has %d containers; this kubelet runs one", pod.Name, len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	root := filepath.Join(s.dir, s.ns, pod.Name)
	// The volumes are refreshed while the container runs.
	vctx, stopSync := context.WithCancel(ctx)
	started := false
	defer func() {
		if !started {
			stopSync()
		}
	}()
	paths := map[string]string{}
	for i, vm := range c.VolumeMounts {
		local := filepath.Join(root, fmt.Sprintf("vol%d", i))
		paths[vm.MountPath] = local
		vol := volumeNamed(pod, vm.Name)
		if vol == nil {
			return fmt.Errorf("pod %s mounts volume %s, which it lacks", pod.Name, vm.Name)
		}
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
		switch {
		case vol.ConfigMap != nil || vol.Secret != nil:
			if err := s.syncVolume(ctx, vol, local); err != nil {
				return err
			}
			go wait.UntilWithContext(vctx, func(ctx context.Context) { _ = s.syncVolume(ctx, vol, local) }, 100*time.Millisecond)
		default:
			if err := os.MkdirAll(local, 0o755); err != nil {
				return err
			}
		}
	}
	term := filepath.Join(root, "termination-log")
	if err := os.WriteFile(term, nil, 0o644); err != nil {
		return err
	}
	if c.TerminationMessagePath != "" {
		paths[c.TerminationMessagePath] = term
	}
	argv := make([]string, len(c.Command)+len(c.Args))
	for i, a := range append(append([]string{}, c.Command...), c.Args...) {
		argv[i] = replacePaths(a, paths)
	}
	if len(argv) == 0 {
		return fmt.Errorf("pod %s: its container has no command", pod.Name)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root}
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	log := &logWriter{k: s.k, key: [3]string{s.ns, pod.Name, c.Name}}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.k.SetLog(s.ns, pod.Name, c.Name, "")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pod %s: start %s: %w", pod.Name, argv[0], err)
	}
	started = true
	p := &podProc{cmd: cmd, done: make(chan struct{})}
	s.mu.Lock()
	s.procs[pod.Name] = p
	s.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		stopSync()
		close(p.done)
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		code := ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		msg, _ := os.ReadFile(term)
		if ctx.Err() == nil {
			// A pod deleted meanwhile is not there to take the status.
			_ = s.k.Exit(ctx, s.ns, pod.Name, code, string(msg))
		}
	}()
	return nil
}

// syncVolume writes the keys of vol's ConfigMap or Secret into a fresh
// folder and points local at it in one rename, as the kubelet's atomic
// writer does: a reader sees every key of one version or of the next. A
// missing object (an optional volume) is an empty folder.
func (s *procServer) syncVolume(ctx context.Context, vol *corev1.Volume, local string) error {
	keys := map[string][]byte{}
	switch {
	case vol.ConfigMap != nil:
		cm, err := s.k.cs.CoreV1().ConfigMaps(s.ns).Get(ctx, vol.ConfigMap.Name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil {
			for k, v := range cm.Data {
				keys[k] = []byte(v)
			}
			for k, v := range cm.BinaryData {
				keys[k] = v
			}
		}
	case vol.Secret != nil:
		sec, err := s.k.cs.CoreV1().Secrets(s.ns).Get(ctx, vol.Secret.SecretName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil {
			for k, v := range sec.Data {
				keys[k] = v
			}
		}
	}
	stamp := versionOf(keys)
	if cur, err := os.Readlink(local); err == nil && filepath.Base(cur) == stamp {
		return nil
	}
	data := filepath.Join(filepath.Dir(local), "data", filepath.Base(local), stamp)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	for k, v := range keys {
		if err := os.WriteFile(filepath.Join(data, k), v, 0o644); err != nil {
			return err
		}
	}
	tmp := local + ".new"
	os.Remove(tmp)
	if err := os.Symlink(data, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, local)
}

// versionOf names one version of a volume's keys.
func versionOf(keys map[string][]byte) string {
	h := fnv.New64a()
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(h, "%s=%d:%s;", k, len(keys[k]), keys[k])
	}
	return fmt.Sprintf("v%016x", h.Sum64())
}

// delete stops a pod being deleted, within its grace period, and ends its
// deletion.
func (s *procServer) delete(ctx context.Context, pod *corev1.Pod) {
	s.mu.Lock()
	p := s.procs[pod.Name]
	s.mu.Unlock()
	if p != nil {
		grace := 30 * time.Second
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		p.stop(grace)
	}
	if ctx.Err() == nil {
		_ = s.k.FinishDeletion(ctx, s.ns, pod.Name)
	}
}

// stop sends the process group SIGTERM, then SIGKILL after grace.
func (p *podProc) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
	<-p.done
}

func (s *procServer) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// logWriter appends a container's output to the log its kubelet serves.
type logWriter struct {
	k   *Kubelet
	key [3]string
}

func (w *logWriter) Write(b []byte) (int, error) {
	w.k.AppendLog(w.key[0], w.key[1], w.key[2], string(b))
	return len(b), nil
}

func volumeNamed(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// replacePaths replaces each container path in s by its local folder,
// longest first.
func replacePaths(s string, paths map[string]string) string {
	keys := slices.Collect(maps.Keys(paths))
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		s = strings.ReplaceAll(s, k, paths[k])
	}
	return s
}
