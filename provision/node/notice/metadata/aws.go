package metadata

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"sortie/provision/node/notice"
)

// IMDSv2 paths and headers.
const (
	awsTokenPath     = "/latest/api/token"
	awsActionPath    = "/latest/meta-data/spot/instance-action"
	awsRebalancePath = "/latest/meta-data/events/recommendations/rebalance"
	awsTokenHeader   = "X-aws-ec2-metadata-token"
	awsTTLHeader     = "X-aws-ec2-metadata-token-ttl-seconds"
)

// awsTokenTTL is how long each session token lives; it is renewed a minute
// before it ends, or at once when the service refuses it.
const awsTokenTTL = 6 * time.Hour

// errTokenRefused says the service answered 401: the token has expired or
// the service restarted, so get a new one.
var errTokenRefused = errors.New("the IMDS session token was refused (401)")

// awsSession holds the current IMDSv2 token.
type awsSession struct {
	c       notice.Config
	client  *http.Client
	base    string
	token   string
	expires time.Time
}

// WatchAWS polls the instance metadata service every c.Interval for a spot
// interruption notice and a rebalance recommendation.
func (h HTTP) WatchAWS(ctx context.Context, c notice.Config, report func(notice.Notice) bool) {
	s := &awsSession{c: c, client: h.client(), base: strings.TrimRight(c.Endpoint, "/")}
	if s.base == "" {
		s.base = notice.DefaultAWSEndpoint
	}
	for {
		ns, err := s.poll(ctx)
		if err != nil && ctx.Err() == nil {
			c.Log.Warn("asking the instance metadata service for a spot notice", "endpoint", s.base, "err", err)
		}
		for _, n := range ns {
			if report(n) {
				return
			}
		}
		if !c.Wait(ctx, c.Interval) {
			return
		}
	}
}

// poll asks once for both notices. A refused token is renewed and the
// question asked again, once.
func (s *awsSession) poll(ctx context.Context) ([]notice.Notice, error) {
	ns, err := s.pollOnce(ctx)
	if errors.Is(err, errTokenRefused) {
		s.token = ""
		ns, err = s.pollOnce(ctx)
	}
	return ns, err
}

func (s *awsSession) pollOnce(ctx context.Context) ([]notice.Notice, error) {
	if err := s.renew(ctx); err != nil {
		return nil, err
	}
	var ns []notice.Notice
	body, err := s.get(ctx, awsActionPath)
	if err != nil {
		return nil, err
	}
	if body != nil {
		n, err := s.spotNotice(body)
		if err != nil {
			return nil, err
		}
		ns = append(ns, n)
	}
	body, err = s.get(ctx, awsRebalancePath)
	if err != nil {
		return ns, err
	}
	if body != nil {
		ns = append(ns, notice.Notice{Kind: notice.KindRebalance, Source: notice.SourceAWS, At: s.c.Now()})
	}
	return ns, nil
}

// spotNotice reads {"action": "terminate", "time": "2026-11-30T11:00:00Z"}.
func (s *awsSession) spotNotice(body []byte) (notice.Notice, error) {
	var a struct {
		Action string `json:"action"`
		Time   string `json:"time"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return notice.Notice{}, fmt.Errorf("read %s %q: %w", awsActionPath, truncate(body), err)
	}
	n := notice.Notice{Kind: notice.KindSpotInterruption, Source: notice.SourceAWS, At: s.c.Now()}
	if a.Time == "" {
		return n, nil
	}
	t, err := time.Parse(time.RFC3339, a.Time)
	if err != nil {
		// The notice is real even if its time cannot be read: report it
		// without a deadline rather than miss it.
		s.c.Log.Warn("spot interruption notice with an unreadable time", "time", a.Time, "err", err)
		return n, nil
	}
	n.Deadline = t
	return n, nil
}

// renew gets a session token when there is none or it is about to end.
func (s *awsSession) renew(ctx context.Context) error {
	if s.token != "" && s.c.Now().Before(s.expires.Add(-time.Minute)) {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.base+awsTokenPath, nil)
	if err != nil {
		return fmt.Errorf("IMDS endpoint %q: %w", s.base, err)
	}
	req.Header.Set(awsTTLHeader, fmt.Sprint(int(awsTokenTTL/time.Second)))
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("get an IMDS token: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return fmt.Errorf("get an IMDS token: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get an IMDS token: %s: %q", resp.Status, truncate(body))
	}
	s.token = strings.TrimSpace(string(body))
	s.expires = s.c.Now().Add(awsTokenTTL)
	return nil
}

// get returns the body of path, or nil when the service answers 404 (no
// such notice now).
func (s *awsSession) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("IMDS endpoint %q: %w", s.base, err)
	}
	req.Header.Set(awsTokenHeader, s.token)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", path, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusNotFound:
		return nil, nil
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("get %s: %w", path, errTokenRefused)
	}
	return nil, fmt.Errorf("get %s: %s: %q", path, resp.Status, truncate(body))
}

// HTTP asks the clouds' metadata services over HTTP (package notice's
// Metadata). The node agent's program links it; nothing the CLI links does.
type HTTP struct {
	// Client makes the requests; nil means one with a 5s timeout (GCE's
	// long poll gets a longer one).
	Client *http.Client
}

var _ notice.Metadata = HTTP{}

func (h HTTP) client() *http.Client {
	if h.Client == nil {
		return &http.Client{Timeout: 5 * time.Second}
	}
	return h.Client
}

// truncate keeps error messages short when a service answers with a page.
func truncate(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
