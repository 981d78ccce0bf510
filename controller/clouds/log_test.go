package clouds

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"sortie/controller/config"
	"sortie/provision"
)

// A provider logs to the controller's logger, through Set.Log, with its
// cloud's name on every line.
func TestProvidersLogToTheSetsLoggerWithTheirCloud(t *testing.T) {
	var buf bytes.Buffer
	cloud := Cloud{Name: "sim", Open: func(_ context.Context, cfg config.Config, log *slog.Logger) (provision.Provider, error) {
		log.Info("opened")
		return LocalProvider(cfg), nil
	}}
	s := NewSet(config.Config{Home: t.TempDir()}, []Cloud{cloud})
	s.Log = slog.New(slog.NewJSONHandler(&buf, nil))
	if _, err := s.Provider(context.Background(), "sim"); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("the provider's line %q: %v", buf.String(), err)
	}
	if rec["msg"] != "opened" || rec["cloud"] != "sim" {
		t.Errorf("line %v, want msg opened and cloud sim", rec)
	}
}
