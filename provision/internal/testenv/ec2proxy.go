package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"sync"
)

// EC2Proxy sits between the code under test and moto and makes the weather
// moto cannot: capacity errors in chosen zones, one-off API errors, and
// instances the cloud took away (spot interruptions). It also counts calls.
type EC2Proxy struct {
	// URL is the endpoint to give the AWS SDK.
	URL      string
	upstream string

	mu         sync.Mutex
	noCapacity map[string]bool // zone or region -> launches fail
	failNext   map[string][]apiError
	marks      map[string]instanceMark // instance id -> state to report
	calls      map[callKey]int
}

type callKey struct{ action, region string }

type apiError struct {
	status        int
	code, message string
}

// instanceMark is the state DescribeInstances reports for an instance,
// whatever moto says.
type instanceMark struct {
	state      string
	stateCode  int
	reasonCode string
	reasonMsg  string
}

// StartEC2Proxy serves a proxy to upstream (moto's URL) on 127.0.0.1.
func StartEC2Proxy(t TB, upstream string) *EC2Proxy {
	t.Helper()
	p, stop, err := ServeEC2Proxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return p
}

// ServeEC2Proxy serves a proxy to upstream on 127.0.0.1 until stop:
// StartEC2Proxy for a program that is not a test.
func ServeEC2Proxy(upstream string) (p *EC2Proxy, stop func(), err error) {
	target, err := url.Parse(upstream)
	if err != nil {
		return nil, nil, err
	}
	p = &EC2Proxy{upstream: upstream, noCapacity: map[string]bool{},
		failNext: map[string][]apiError{}, marks: map[string]instanceMark{}, calls: map[callKey]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			// Responses are rewritten as text; keep them uncompressed.
			r.Out.Header.Del("Accept-Encoding")
		},
		ModifyResponse: p.modifyResponse,
	}
	srv := httptest.NewServer(p.handler(rp))
	p.URL = srv.URL
	return p, srv.Close, nil
}

// SetCapacity turns launches in a zone (or a whole region) on or off: while
// off, RunInstances there fails with InsufficientInstanceCapacity.
func (p *EC2Proxy) SetCapacity(zoneOrRegion string, available bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if available {
		delete(p.noCapacity, zoneOrRegion)
	} else {
		p.noCapacity[zoneOrRegion] = true
	}
}

// FailNext makes the next call of action fail with an EC2 error code (an
// IAM one for IAM's actions).
func (p *EC2Proxy) FailNext(action, code, message string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failNext[action] = append(p.failNext[action], apiError{http.StatusBadRequest, code, message})
}

// SpotInterrupt takes an instance away as EC2 does on a spot interruption: it
// is terminated in moto, and DescribeInstances reports it terminated with
// StateReason Server.SpotInstanceTermination from now on.
func (p *EC2Proxy) SpotInterrupt(ctx context.Context, region, instanceID string) error {
	p.MarkInstance(instanceID, "terminated", "Server.SpotInstanceTermination",
		"Server.SpotInstanceTermination: Spot instance termination")
	_, err := Call(ctx, p.upstream, region, "TerminateInstances", map[string]string{"InstanceId.1": instanceID})
	return err
}

// MarkInstance makes DescribeInstances report the instance in state with the
// given StateReason, without telling moto.
func (p *EC2Proxy) MarkInstance(instanceID, state, reasonCode, reasonMessage string) {
	codes := map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marks[instanceID] = instanceMark{state: state, stateCode: codes[state], reasonCode: reasonCode, reasonMsg: reasonMessage}
}

// Calls is how many times action was called in region (any region when
// region is empty).
func (p *EC2Proxy) Calls(action, region string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.calls {
		if k.action == action && (region == "" || k.region == region) {
			n += v
		}
	}
	return n
}

// ResetCalls zeroes the call counters.
func (p *EC2Proxy) ResetCalls() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = map[callKey]int{}
}

var credentialRegion = regexp.MustCompile(`Credential=[^/]+/[^/]+/([^/]+)/([^/]+)/`)

func (p *EC2Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		action := form.Get("Action")
		region, service := "", ""
		if m := credentialRegion.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
			region, service = m[1], m[2]
		}
		if fault, ok := p.fault(action, region, form); ok {
			if service == "iam" {
				writeIAMError(w, fault)
			} else {
				writeEC2Error(w, fault)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fault counts the call and says whether to fail it instead of forwarding.
func (p *EC2Proxy) fault(action, region string, form url.Values) (apiError, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[callKey{action, region}]++
	if queued := p.failNext[action]; len(queued) > 0 {
		p.failNext[action] = queued[1:]
		return queued[0], true
	}
	if action == "RunInstances" {
		zone := form.Get("Placement.AvailabilityZone")
		if p.noCapacity[region] || (zone != "" && p.noCapacity[zone]) {
			where := zone
			if where == "" {
				where = region
			}
			return apiError{http.StatusInternalServerError, "InsufficientInstanceCapacity",
				fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).",
					form.Get("InstanceType"), where)}, true
		}
	}
	return apiError{}, false
}

func writeEC2Error(w http.ResponseWriter, e apiError) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>00000000-0000-0000-0000-000000000000</RequestID></Response>`,
		xmlEscape(e.code), xmlEscape(e.message))
}

// writeIAMError answers as IAM does (moto serves IAM on the same port,
// and the proxy passes its calls on too).
func writeIAMError(w http.ResponseWriter, e apiError) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>
<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>00000000-0000-0000-0000-000000000000</RequestId></ErrorResponse>`,
		xmlEscape(e.code), xmlEscape(e.message))
}

func (p *EC2Proxy) modifyResponse(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK || resp.Request == nil {
		return nil
	}
	// The request body was consumed; the action is in the response's root
	// element name instead.
	p.mu.Lock()
	marks := maps.Clone(p.marks)
	p.mu.Unlock()
	if len(marks) == 0 {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if bytes.Contains(body[:min(len(body), 200)], []byte("<DescribeInstancesResponse")) {
		body, err = rewriteInstances(body, marks)
		if err != nil {
			return err
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}
