// Package client is the API's client: the CLI's Service over HTTP, so that
// every `jobs` verb works against a `sortie server` with the output it
// has without one. Its types are the service's; it uploads workdirs and
// file mounts by their hash before a launch names them.
//
// It must not import sortie/controller, controller/clouds/all or a cloud SDK,
// since the CLI links it, and not controller/store itself: the client speaks
// the service's types (controller/contract).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"sortie/controller/contract"
	"sortie/schema"
	"sortie/strategy"
)

// Client speaks to one server as one user.
type Client struct {
	// URL is the server's, e.g. https://sortie.example.com:8080.
	URL   string
	Token string
	HTTP  *http.Client
	// Getenv is the user's environment: the values of secrets the task
	// declares without one are taken from it, as they are without a
	// server.
	Getenv func(string) string
	Now    func() time.Time
	// Sources lists the workdirs and local file_mounts sources a launch
	// names, each with its path on this machine: the uploads a launch
	// sends first. It is the service's LocalSources, which reads the task
	// as a launch does; nil uploads nothing.
	Sources func(contract.LaunchRequest) (map[string]string, error)
}

// New is a client of url with token.
func New(url, token string, getenv func(string) string) *Client {
	return &Client{URL: strings.TrimRight(url, "/"), Token: token, HTTP: &http.Client{}, Getenv: getenv, Now: time.Now}
}

// remoteError is an error the server answered: its message, as the CLI
// prints it, over the service's error it stands for (so exit statuses and
// errors.Is/As are what they are without a server).
type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }

// Error turns an error body into the service's error.
func Error(status int, d contract.ErrorDetail) error {
	switch d.Code {
	case contract.CodeInvalidTask:
		ve := &schema.ValidationError{Problems: d.Problems}
		if ve.Error() == d.Message {
			return ve
		}
		return &remoteError{msg: d.Message, err: ve}
	case contract.CodeUsage, contract.CodeTooLarge, contract.CodeDigest:
		return &contract.UsageError{Err: errors.New(d.Message)}
	case contract.CodeKnownFailure:
		f := d.Failure
		if f == nil {
			f = &contract.FailureView{JobID: d.Job}
			if d.Owner != "" {
				f.Owner = &d.Owner
			}
		}
		return &remoteError{msg: d.Message, err: &contract.KnownFailureError{Failure: f}}
	case contract.CodeBudgetSpent:
		be := &contract.BudgetError{User: d.Owner}
		if b := d.Budget; b != nil {
			be = &contract.BudgetError{User: b.User, Spent: b.Spent, Budget: b.Budget, Estimate: b.Estimate, Month: b.Month}
		}
		return &remoteError{msg: d.Message, err: be}
	case contract.CodeForbidden:
		if d.Job == 0 && d.Verb != "" {
			return &remoteError{msg: d.Message, err: &contract.AdminError{Verb: d.Verb}}
		}
		return &remoteError{msg: d.Message, err: &contract.ForbiddenError{Job: d.Job, Owner: d.Owner, Verb: d.Verb}}
	case contract.CodeNotFound:
		return &remoteError{msg: d.Message, err: contract.ErrNoSuchJob}
	case contract.CodeConflict:
		if s := contract.Sentinel(d.Verb); s != nil {
			return &remoteError{msg: d.Message, err: s}
		}
	case contract.CodeBusy:
		return &remoteError{msg: d.Message, err: contract.ErrBusy}
	case contract.CodeUnauthorized:
		return fmt.Errorf("the server refused the token (HTTP %d): %s; log in again with `sortie login URL`, or check SORTIE_TOKEN", status, d.Message)
	}
	return fmt.Errorf("the server answered HTTP %d: %s", status, d.Message)
}

// do sends a request; a 2xx answer's body is left to read, any other is
// the error its body says.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, body)
	if err != nil {
		return nil, fmt.Errorf("SORTIE_API_URL %q: %w", c.URL, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach the server at %s: %w", c.URL, err)
	}
	if resp.StatusCode/100 == 2 || method == http.MethodHead {
		return resp, nil
	}
	defer resp.Body.Close()
	var eb contract.ErrorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := json.Unmarshal(b, &eb); err != nil || eb.Error.Code == "" {
		return nil, fmt.Errorf("the server at %s answered HTTP %d: %s", c.URL, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil, Error(resp.StatusCode, eb.Error)
}

// call sends in as JSON (nil sends nothing) and decodes the answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	ct := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body, ct = bytes.NewReader(b), "application/json"
	}
	resp, err := c.do(ctx, method, path, body, ct)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("read the server's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// Me is who the token names.
func (c *Client) Me(ctx context.Context) (*contract.Asker, error) {
	var a contract.Asker
	return &a, c.call(ctx, "GET", "/v1/me", nil, &a)
}

// Launch uploads the task's workdirs and file mounts the server lacks,
// then asks it to launch.
func (c *Client) Launch(ctx context.Context, req contract.LaunchRequest) (*contract.JobView, error) {
	if req.Task == nil {
		data, err := schema.ReadFile(req.File)
		if err != nil {
			return nil, &contract.UsageError{Err: fmt.Errorf("read task file: %w", err)}
		}
		req.Task = data
	}
	inputs, err := c.upload(ctx, req)
	if err != nil {
		return nil, err
	}
	req.Inputs = inputs
	var res contract.LaunchResult
	err = c.withSecrets(&req.SecretEnv, func() error { return c.call(ctx, "POST", "/v1/jobs", req, &res) })
	if err != nil {
		return nil, err
	}
	if req.Warn != nil {
		for _, w := range res.Warnings {
			req.Warn(w)
		}
	}
	return res.Job, nil
}

// withSecrets runs call, and once more when the server says that secrets
// the task declares without a value have none and this user's environment
// has them: their values go in env, as a launch without a server would
// take them from the environment.
func (c *Client) withSecrets(env *map[string]string, call func() error) error {
	err := call()
	var ve *schema.ValidationError
	if !errors.As(err, &ve) || c.Getenv == nil {
		return err
	}
	found := map[string]string{}
	for _, p := range ve.Problems {
		i := strings.LastIndex(p.Path, "secrets.")
		if i < 0 || !strings.HasPrefix(p.Message, "has no value") {
			return err
		}
		k := p.Path[i+len("secrets."):]
		v := c.Getenv(k)
		if v == "" {
			return err
		}
		found[k] = v
	}
	*env = found
	return call()
}

// Queue is `jobs queue`.
func (c *Client) Queue(ctx context.Context, req contract.QueueRequest) ([]contract.JobView, error) {
	out := []contract.JobView{}
	err := c.QueueEach(ctx, req, func(v contract.JobView) error { out = append(out, v); return nil })
	return out, err
}

// QueueEach reads the server's listing one job at a time.
func (c *Client) QueueEach(ctx context.Context, req contract.QueueRequest, fn func(contract.JobView) error) error {
	q := url.Values{}
	if req.All {
		q.Set("all", "true")
	}
	for _, s := range req.Statuses {
		q.Add("status", string(s))
	}
	if req.NameGlob != "" {
		q.Set("name", req.NameGlob)
	}
	q.Set("finished", strconv.Itoa(req.Finished))
	if req.Owner != "" {
		q.Set("owner", req.Owner)
	}
	if req.Limit > 0 {
		q.Set("limit", strconv.Itoa(req.Limit))
	}
	if req.Before > 0 {
		q.Set("before", strconv.FormatInt(req.Before, 10))
	}
	resp, err := c.do(ctx, "GET", "/v1/jobs?"+q.Encode(), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("read the queue: %w", err)
	}
	for dec.More() {
		var v contract.JobView
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("read the queue: %w", err)
		}
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// Show is `jobs show`.
func (c *Client) Show(ctx context.Context, id int64) (*contract.JobDetail, error) {
	var d contract.JobDetail
	if err := c.call(ctx, "GET", fmt.Sprintf("/v1/jobs/%d", id), nil, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// Logs streams a job's logs to w, as `jobs logs` prints them.
func (c *Client) Logs(ctx context.Context, req contract.LogsRequest, w io.Writer) error {
	q := url.Values{}
	q.Set("task", strconv.Itoa(req.Task))
	q.Set("attempt", strconv.Itoa(req.Attempt))
	q.Set("follow", strconv.FormatBool(req.Follow))
	q.Set("from_start", strconv.FormatBool(req.FromStart))
	if req.Step != nil {
		q.Set("steps", "true")
	}
	resp, err := c.do(ctx, "GET", fmt.Sprintf("/v1/jobs/%d/logs?%s", req.ID, q.Encode()), nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev contract.LogEvent
		if err := dec.Decode(&ev); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("the server's log stream of job %d broke off: %w", req.ID, err)
		}
		switch {
		case ev.End != nil:
			if ev.End.Error != nil {
				return Error(http.StatusConflict, *ev.End.Error)
			}
			return nil
		case ev.Attempt != nil:
			if req.Banner != nil {
				req.Banner(*ev.Attempt)
			}
		case ev.Step != "":
			if req.Step != nil {
				req.Step(ev.Step)
			}
		case ev.Bytes != nil:
			if _, err := w.Write(ev.Bytes); err != nil {
				return err
			}
		default:
			if _, err := io.WriteString(w, ev.Text); err != nil {
				return err
			}
		}
	}
}

// CancelTargets lists what a cancel would cancel.
func (c *Client) CancelTargets(ctx context.Context, req contract.CancelRequest) ([]contract.JobView, error) {
	var out []contract.JobView
	return out, c.call(ctx, "POST", "/v1/jobs/cancel?dry_run=true", req, &out)
}

// Cancel is `jobs cancel`.
func (c *Client) Cancel(ctx context.Context, req contract.CancelRequest) ([]int64, error) {
	var out contract.Cancelled
	if err := c.call(ctx, "POST", "/v1/jobs/cancel", req, &out); err != nil {
		return nil, err
	}
	return out.Cancelled, nil
}

// Release is `jobs release`.
func (c *Client) Release(ctx context.Context, id int64) (*contract.ReleaseView, error) {
	var out contract.ReleaseView
	if err := c.call(ctx, "POST", fmt.Sprintf("/v1/jobs/%d/release", id), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetPriority is `jobs priority ID N`.
func (c *Client) SetPriority(ctx context.Context, id int64, priority int) (*contract.PriorityView, error) {
	var out contract.PriorityView
	if err := c.call(ctx, "POST", fmt.Sprintf("/v1/jobs/%d/priority", id), contract.PriorityRequest{Priority: priority}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Shell is `jobs ssh`, which a server does not carry.
func (c *Client) Shell(ctx context.Context, req contract.ShellRequest) (int, error) {
	return 0, &contract.UsageError{Err: fmt.Errorf("jobs ssh does not go through a server (SORTIE_API_URL %s): run it on the server's machine, "+
		"or unset SORTIE_API_URL there", c.URL)}
}

// RetryTargets lists what a retry would retry.
func (c *Client) RetryTargets(ctx context.Context, req contract.RetryRequest) ([]contract.JobView, error) {
	var out []contract.JobView
	return out, c.call(ctx, "POST", "/v1/jobs/retry?dry_run=true", req, &out)
}

// Retry is `jobs retry`.
func (c *Client) Retry(ctx context.Context, req contract.RetryRequest) ([]contract.RetryResult, error) {
	var out contract.RetryResults
	err := c.withSecrets(&req.SecretEnv, func() error { return c.call(ctx, "POST", "/v1/jobs/retry", req, &out) })
	if err != nil {
		return nil, err
	}
	if req.Warn != nil {
		for _, w := range out.Warnings {
			req.Warn(w)
		}
	}
	return out.Retries, nil
}

// Failures is `jobs failures`.
func (c *Client) Failures(ctx context.Context) ([]contract.FailureView, error) {
	var out []contract.FailureView
	return out, c.call(ctx, "GET", "/v1/failures", nil, &out)
}

// ForgetFailure is `jobs failures forget KEY`.
func (c *Client) ForgetFailure(ctx context.Context, prefix string) (string, error) {
	var out contract.Forgotten
	if err := c.call(ctx, "DELETE", "/v1/failures/"+url.PathEscape(prefix), nil, &out); err != nil {
		return "", err
	}
	return out.Key, nil
}

// ForgetAllFailures is `jobs failures forget --all`.
func (c *Client) ForgetAllFailures(ctx context.Context) (int64, error) {
	var out contract.Forgotten
	if err := c.call(ctx, "DELETE", "/v1/failures", nil, &out); err != nil {
		return 0, err
	}
	return out.Count, nil
}

// Quarantine is `sortie quarantine list`.
func (c *Client) Quarantine(ctx context.Context) ([]contract.QuarantineView, error) {
	var out []contract.QuarantineView
	return out, c.call(ctx, "GET", "/v1/quarantine", nil, &out)
}

// ClearQuarantine is `sortie quarantine clear PLACEMENT`.
func (c *Client) ClearQuarantine(ctx context.Context, k strategy.QuarantineKey) (*contract.QuarantineCleared, error) {
	var out contract.QuarantineCleared
	p := k.Placement
	path := "/v1/quarantine/" + url.PathEscape(p.Cloud) + "/" + url.PathEscape(p.Region) + "/"
	switch k.Level() {
	case strategy.LevelNode:
		path += "node/" + url.PathEscape(k.Host)
	case strategy.LevelInstanceType:
		path += url.PathEscape(p.Zone) + "/type/" + url.PathEscape(k.InstanceType)
	default:
		path += url.PathEscape(p.Zone)
	}
	if err := c.call(ctx, "DELETE", path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Prices is `sortie prices`.
func (c *Client) Prices(ctx context.Context, req contract.PricesRequest) ([]contract.PriceView, error) {
	q := url.Values{}
	for k, v := range map[string]string{"cloud": req.Cloud, "type": req.Type, "region": req.Region} {
		if v != "" {
			q.Set(k, v)
		}
	}
	path := "/v1/prices"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out []contract.PriceView
	return out, c.call(ctx, "GET", path, nil, &out)
}

// RefreshPrices is `sortie prices refresh`.
func (c *Client) RefreshPrices(ctx context.Context, req contract.PricesRequest) (*contract.PricesRefreshed, error) {
	var out contract.PricesRefreshed
	if err := c.call(ctx, "POST", "/v1/prices/refresh", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Close does nothing: a client holds no connection of its own.
func (c *Client) Close() error { return nil }

// Quotas is `sortie server quotas`: the limits in effect.
func (c *Client) Quotas(ctx context.Context) ([]contract.QuotaView, error) {
	var out []contract.QuotaView
	return out, c.call(ctx, "GET", "/v1/quotas", nil, &out)
}

// SetQuota is `sortie server quotas set`.
func (c *Client) SetQuota(ctx context.Context, req contract.QuotaRequest) (*contract.QuotaView, error) {
	var out contract.QuotaView
	if err := c.call(ctx, "PUT", "/v1/quotas", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// UnsetQuota is `sortie server quotas unset`.
func (c *Client) UnsetQuota(ctx context.Context, req contract.QuotaRequest) (*contract.QuotaView, error) {
	var out contract.QuotaView
	if err := c.call(ctx, "POST", "/v1/quotas/unset", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Usage is `sortie server usage`: an admin is given every user's row,
// any other user their own.
func (c *Client) Usage(ctx context.Context) ([]contract.UsageView, error) {
	var out []contract.UsageView
	return out, c.call(ctx, "GET", "/v1/usage", nil, &out)
}
