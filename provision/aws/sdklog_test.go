package aws

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/smithy-go/logging"
)

// The AWS SDK's messages reach the provider's logger as JSON lines, a
// warning as a warning, instead of plain text on stderr.
func TestSDKMessagesAreJSONLinesOfTheLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil)).With("cloud", CloudName)
	awsCfg, err := loadAWSConfig(context.Background(), withDefaults(Config{Logger: log, Regions: []string{"us-east-1"}}))
	if err != nil {
		t.Fatal(err)
	}
	awsCfg.Logger.Logf(logging.Warn, "Response has no supported checksum. Not validating response payload.")
	awsCfg.Logger.Logf(logging.Debug, "request %d", 7)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d lines, want the warning alone (debug is below the handler's level): %q", len(lines), buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	if rec["level"] != "WARN" || rec["source"] != "aws-sdk" || rec["cloud"] != CloudName || !strings.HasPrefix(rec["msg"].(string), "Response has no supported checksum") {
		t.Errorf("line %v", rec)
	}
}
