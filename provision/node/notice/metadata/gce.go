package metadata

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sortie/provision/node/notice"
)

const gcePreemptedPath = "/computeMetadata/v1/instance/preempted"

// gceHang is how long the metadata server may hold one wait_for_change
// request (its timeout_sec); the request itself is given a little longer.
const gceHang = 60 * time.Second

// WatchGCE long-polls the GCE metadata server's instance/preempted, and
// reports a preemption with GCE's 30 s as its deadline.
func (h HTTP) WatchGCE(ctx context.Context, c notice.Config, report func(notice.Notice) bool) {
	base := strings.TrimRight(c.Endpoint, "/")
	if base == "" {
		base = notice.DefaultGCEEndpoint
	}
	// The first question is answered at once and gives the ETag; each next
	// one hangs until the value differs from that ETag's.
	etag, wait := "", false
	for {
		value, tag, err := h.gcePreempted(ctx, base, etag, wait)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			c.Log.Warn("asking the GCE metadata server whether the instance is preempted", "endpoint", base, "err", err)
			if !c.Wait(ctx, c.Interval) {
				return
			}
			continue
		case value == "TRUE":
			if report(notice.Notice{Kind: notice.KindPreempted, Source: notice.SourceGCE, At: c.Now(), Deadline: c.Now().Add(notice.GCEWarning)}) {
				return
			}
		}
		etag, wait = tag, true
		if ctx.Err() != nil {
			return
		}
	}
}

// gcePreempted asks the metadata server for instance/preempted; with wait,
// the server holds the answer until the value's ETag is no longer etag (or
// until it has waited gceHang).
func (h HTTP) gcePreempted(ctx context.Context, base, etag string, wait bool) (value, tag string, err error) {
	q := url.Values{}
	if wait {
		q.Set("wait_for_change", "true")
		q.Set("timeout_sec", fmt.Sprint(int(gceHang/time.Second)))
		if etag != "" {
			q.Set("last_etag", etag)
		}
	}
	u := base + gcePreemptedPath
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	rctx, cancel := context.WithTimeout(ctx, gceHang+15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return "", "", fmt.Errorf("GCE metadata endpoint %q: %w", base, err)
	}
	req.Header.Set("Metadata-Flavor", "Google")
	client := h.client()
	if client.Timeout != 0 && client.Timeout < gceHang+15*time.Second {
		// The default client's short timeout would cut every long poll.
		cc := *client
		cc.Timeout = 0
		client = &cc
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("get %s: %w", gcePreemptedPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", "", fmt.Errorf("get %s: %w", gcePreemptedPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("get %s: %s: %q", gcePreemptedPath, resp.Status, truncate(body))
	}
	value = strings.TrimSpace(string(body))
	if value != "TRUE" && value != "FALSE" {
		return "", "", fmt.Errorf("get %s: %q is neither TRUE nor FALSE", gcePreemptedPath, truncate(body))
	}
	return value, resp.Header.Get("ETag"), nil
}
