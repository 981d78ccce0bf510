package controller

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"sortie/controller/metrics"
)

func TestMetricsAddressTakenIsRefusedNamingTheKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err = ServeMetrics(ln.Addr().String(), metrics.New(nil), quiet)
	if err == nil || !strings.Contains(err.Error(), "controller.metrics_listen") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("listening on a taken address: %v, want an error naming controller.metrics_listen and the address", err)
	}
	stop, err := ServeMetrics("", metrics.New(nil), quiet)
	if err != nil {
		t.Fatal(err)
	}
	stop()
}

func TestMetricsAreServedUntilStopped(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()
	m := metrics.New(nil)
	m.APICall("aws", "RunInstances", nil)
	stop, err := ServeMetrics(addr, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	stop()
	if !strings.Contains(string(body), `sortie_provider_api_calls_total{call="RunInstances",cloud="aws"} 1`) {
		t.Errorf("/metrics lacks the counted call:\n%s", body)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("/metrics still answers after stop")
	}
}
