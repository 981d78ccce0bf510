package metrics

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"sortie/controller/lifecycle"
)

type counts map[lifecycle.Status]int

func (c counts) CountJobsByStatus(context.Context) (map[lifecycle.Status]int, error) {
	if c == nil {
		return nil, errors.New("store closed")
	}
	return c, nil
}

func get(t *testing.T, m *Metrics) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Code, rec.Body.String()
}

// The jobs gauge is read at each scrape and lists every status, zero ones
// included.
func TestJobsGaugeIsReadAtScrape(t *testing.T) {
	c := counts{lifecycle.Running: 2}
	m := New(c)
	_, body := get(t, m)
	for _, want := range []string{`sortie_jobs{status="RUNNING"} 2`, `sortie_jobs{status="SUCCEEDED"} 0`, `sortie_jobs{status="CANCELLING"} 0`} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
	c[lifecycle.Running] = 1
	c[lifecycle.Succeeded] = 1
	if _, body = get(t, m); !strings.Contains(body, `sortie_jobs{status="RUNNING"} 1`) || !strings.Contains(body, `sortie_jobs{status="SUCCEEDED"} 1`) {
		t.Errorf("a second scrape does not read the store again:\n%s", body)
	}
}

func TestAStoreThatCannotCountFailsTheScrape(t *testing.T) {
	code, body := get(t, New(counts(nil)))
	if code != 500 || !strings.Contains(body, "store closed") {
		t.Errorf("scrape with a failing store: %d %q, want 500 naming the error", code, body)
	}
}

func TestAPICallCountsErrorsApart(t *testing.T) {
	m := New(nil)
	m.APICall("gcp", "InsertInstance", nil)
	m.APICall("gcp", "InsertInstance", errors.New("quota"))
	_, body := get(t, m)
	for _, want := range []string{`sortie_provider_api_calls_total{call="InsertInstance",cloud="gcp"} 2`, `sortie_provider_api_errors_total{call="InsertInstance",cloud="gcp"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
}
