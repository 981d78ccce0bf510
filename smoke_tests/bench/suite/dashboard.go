package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"time"

	"sortie/controller/api"
	"sortie/controller/api/dashboard"
	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/service"
)

// DashboardResult is the dashboard group's: the queue page's first page
// and the API's same page, each the median of their runs.
type DashboardResult struct {
	Page, API         time.Duration
	PageRuns, APIRuns []time.Duration
	Rows              int
}

// RunDashboardQueue serves the store at o.Home (BuildQueueStore's) as
// `sortie server` does, the API and the dashboard on one handler on
// 127.0.0.1 (no controller: nothing moves while it is timed), and times
// o.Runs loads of the queue page, signed in with a cookie, each beside
// the API's same page, GET /v1/jobs?limit=50, after one untimed load of
// each.
func RunDashboardQueue(ctx context.Context, o QueueOptions) (*DashboardResult, error) {
	svc, err := service.Open(ctx, o.Home, clouds.Light())
	if err != nil {
		return nil, err
	}
	defer svc.Close()
	up := &api.Uploads{Dir: filepath.Join(o.Home, "uploads")}
	api.ForServer(svc, up, nil)
	tok, hash, err := api.NewToken()
	if err != nil {
		return nil, err
	}
	if err := svc.Store.AddUser(ctx, "bench", hash, false); err != nil {
		return nil, err
	}
	d, err := dashboard.New(dashboard.Options{Service: func(a *contract.Asker) dashboard.Service { return svc.As(a) }, Auth: api.TokenAuth(svc.Store)})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewServer(dashboard.Mount(api.NewServer(api.Options{Service: svc, Store: svc.Store, Uploads: up}), d))
	defer srv.Close()
	get := func(path string, page bool) (time.Duration, string, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		if err != nil {
			return 0, "", err
		}
		if page {
			req.AddCookie(&http.Cookie{Name: dashboard.CookieName, Value: tok})
		} else {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		el := time.Since(t0)
		if err != nil {
			return 0, "", err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, "", fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return el, string(b), nil
	}
	r := &DashboardResult{}
	for i := 0; i <= o.Runs; i++ {
		dp, body, err := get("/", true)
		if err != nil {
			return nil, err
		}
		da, _, err := get("/v1/jobs?limit=50", false)
		if err != nil {
			return nil, err
		}
		r.Rows = strings.Count(body, `<tr id="job-`)
		if i > 0 {
			r.PageRuns, r.APIRuns = append(r.PageRuns, dp), append(r.APIRuns, da)
		}
	}
	r.Page, r.API = Median(r.PageRuns), Median(r.APIRuns)
	return r, nil
}
