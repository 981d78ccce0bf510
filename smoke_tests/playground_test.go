package smoke_tests

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// provision/aws/README.md's "Try it without an account", as a user follows it: make
// aws-playground's program starts moto, the fault proxy and an sshd and
// prints the lines to paste; a spot job launched with them runs on an
// instance, the playground's control port takes the instance away, the job
// recovers on a new one and succeeds; Ctrl-C stops the home's controller
// and everything the playground started.
func TestAWSPlayground(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	program := filepath.Join(dir, "aws-playground")
	if out, err := exec.Command("go", "build", "-o", program, "sortie/provision/aws/playground").CombinedOutput(); err != nil {
		t.Fatalf("go build the playground: %v\n%s", err, out)
	}
	root := filepath.Join(dir, "playground")
	cmd := exec.Command(program, "-dir", root, "-sortie", bin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var printed bytes.Buffer
	var mu sync.Mutex
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			printed.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops") {
				close(ready)
			}
		}
		io.Copy(io.Discard, out)
		exited <- cmd.Wait()
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Signal(os.Interrupt)
			<-exited
		}
	})
	select {
	case <-ready:
	case err := <-exited:
		t.Fatalf("the playground exited (%v) before it was ready: %s", err, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the playground printed no instructions within 2 minutes: %s %s", printed.String(), stderr.String())
	}

	// The lines it says to paste.
	mu.Lock()
	lines := printed.String()
	mu.Unlock()
	vars := map[string]string{}
	for _, line := range strings.Split(lines, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "export":
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
		case len(f) > 1 && f[0] == "unset":
			for _, k := range f[1:] {
				vars[k] = ""
			}
		}
	}
	home, control := vars["SORTIE_HOME"], vars["SORTIE_PLAYGROUND"]
	if home != filepath.Join(root, "home") || control == "" || vars["AWS_ENDPOINT_URL_S3"] == "" || vars["AWS_ENDPOINT_URL_IAM"] == "" {
		t.Fatalf("the playground printed:\n%s\nwant SORTIE_HOME under -dir, SORTIE_PLAYGROUND and the S3 and IAM endpoints", lines)
	}
	var extra []string
	for k, v := range vars {
		extra = append(extra, k+"="+v)
	}
	e := newEnv(t, extra...)
	e.home = home

	marker := filepath.Join(e.dir, "started")
	f := e.write("spot.yaml", `
name: playground-spot
resources:
  cloud: aws
  instance_type: t3.micro
  use_spot: true
run: |
  if [ "$SORTIE_ATTEMPT" = 1 ]; then touch `+marker+`; sleep 300; fi
  echo "attempt $SORTIE_ATTEMPT finished"
`)
	id := e.launch(f)
	waitFile(t, marker)
	first := e.waitStatus(id, "RUNNING").Attempts[0]
	if len(first.InstanceIDs) != 1 || !strings.HasPrefix(first.InstanceIDs[0], "i-") {
		t.Fatalf("the first attempt runs on %v, want one EC2 instance", first.InstanceIDs)
	}
	if _, err := os.Stat(filepath.Join(root, "nodes", first.InstanceIDs[0])); err != nil {
		t.Errorf("the instance's node folder is not in the playground's: %v", err)
	}

	// The documented interrupt: curl -X POST "$SORTIE_PLAYGROUND/interrupt?job=N".
	resp, err := http.Post(control+"/interrupt?job="+strconv.FormatInt(id, 10), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), first.InstanceIDs[0]+" interrupted") {
		t.Fatalf("interrupt job %d: %s %s", id, resp.Status, body)
	}

	d := e.waitStatus(id, "SUCCEEDED")
	if len(d.Attempts) != 2 || deref(d.Attempts[0].Outcome) != "preempted" || deref(d.Attempts[1].Outcome) != "succeeded" {
		t.Fatalf("attempts: %+v", d.Attempts)
	}
	if r := deref(d.Attempts[0].Decision); !strings.Contains(r, "Server.SpotInstanceTermination") {
		t.Errorf("the first attempt's decision is %q, want it to name EC2's spot interruption", r)
	}
	if d.Attempts[1].InstanceIDs[0] == first.InstanceIDs[0] {
		t.Errorf("the job recovered on the interrupted instance %s", first.InstanceIDs[0])
	}
	if d.RecoveryCount != 1 {
		t.Errorf("recovery_count %d, want 1", d.RecoveryCount)
	}
	queue := e.must("jobs", "queue").stdout
	if row := queueRow(queue, id); !strings.Contains(row, "SUCCEEDED") {
		t.Errorf("jobs queue shows job %d as %q, want SUCCEEDED:\n%s", id, row, queue)
	}

	// Ctrl-C stops the controller and everything the playground started.
	stopped = true
	cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the playground ended %v: %s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the playground did not stop within a minute of SIGINT")
	}
	if status := e.run("controller", "status").stdout; !strings.Contains(status, "not running") {
		t.Errorf("after the playground stopped, controller status says %q", status)
	}
	for _, endpoint := range []string{control, vars["AWS_ENDPOINT_URL_S3"], vars["AWS_ENDPOINT_URL_IAM"]} {
		u, err := url.Parse(endpoint)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still answers after the playground stopped", endpoint)
		}
	}
}

// queueRow is job id's row in jobs queue's table.
func queueRow(table string, id int64) string {
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == strconv.FormatInt(id, 10) {
			return line
		}
	}
	return ""
}
