package suite

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// APIResult is the api group's: `jobs launch -d` through a server, and
// the same launch on the local path (a CLI with its own controller), run
// one after the other in the same loop.
type APIResult struct {
	API, Local *LaunchResult
}

// RunAPILaunch starts `sortie server` for o.Home on 127.0.0.1, adds a
// user, and times o.Runs launches of a local `true` task through it
// (SORTIE_API_URL and the user's token), each beside one launch of the
// same task on the local path in a home of its own, after one untimed
// launch of each. The server and the local controller are stopped at the
// end.
func RunAPILaunch(ctx context.Context, o LaunchOptions) (*APIResult, error) {
	srvHome, localHome := filepath.Join(o.Home, "server"), filepath.Join(o.Home, "local")
	work := filepath.Join(o.Home, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(work, "task.yaml")
	if err := os.WriteFile(file, []byte(localTask), 0o644); err != nil {
		return nil, err
	}
	run := func(env []string, args ...string) (time.Duration, string, error) {
		return runCLI(ctx, o.Bin, env, work, args...)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := os.MkdirAll(srvHome, 0o700); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(o.Home, "server.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	srv := exec.CommandContext(ctx, o.Bin, "server", "--listen", addr)
	srv.Env, srv.Stdout, srv.Stderr = Environ(srvHome), logf, logf
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	url := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(url + "/v1/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the server on %s did not answer in 30s; see %s", addr, logf.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, tok, err := run(Environ(srvHome), "server", "users", "add", "bench")
	if err != nil {
		return nil, err
	}
	apiEnv := append(Environ(filepath.Join(o.Home, "client")), "SORTIE_API_URL="+url, "SORTIE_TOKEN="+strings.TrimSpace(tok),
		"HOME="+o.Home, "XDG_CONFIG_HOME="+filepath.Join(o.Home, "config"))
	localEnv := append(Environ(localHome), "HOME="+o.Home, "XDG_CONFIG_HOME="+filepath.Join(o.Home, "config"))
	defer run(localEnv, "controller", "stop") //nolint:errcheck // best effort: the home is thrown away
	r := &APIResult{API: &LaunchResult{}, Local: &LaunchResult{}}
	for i := 0; i <= o.Runs; i++ {
		for _, side := range []struct {
			env []string
			res *LaunchResult
		}{{apiEnv, r.API}, {localEnv, r.Local}} {
			d, out, err := run(side.env, "jobs", "launch", "-d", file)
			if err != nil {
				return nil, err
			}
			id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("jobs launch -d printed %q, want a job id", out)
			}
			side.res.IDs = append(side.res.IDs, id)
			if i > 0 { // the first local one also started its controller
				side.res.Runs = append(side.res.Runs, d)
			}
		}
	}
	r.API.Median, r.Local.Median = Median(r.API.Runs), Median(r.Local.Runs)
	return r, nil
}
