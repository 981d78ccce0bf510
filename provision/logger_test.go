package provision

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// logLine logs one line through Logger(ctx, fallback, cloud) and returns
// its JSON text.
func logLine(t *testing.T, ctx context.Context, out *bytes.Buffer, fallback *slog.Logger, cloud string) string {
	t.Helper()
	out.Reset()
	Logger(ctx, fallback, cloud).Info("launched", "cluster", "c1")
	return strings.TrimSpace(out.String())
}

func TestLoggerIsTheStepsWithItsCloudOnce(t *testing.T) {
	var out bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&out, nil))
	own := base.With("cloud", "aws")
	step := base.With("job", 7, "task", 1, "attempt", 2)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"no step", context.Background(),
			`"cloud":"aws","cluster":"c1"`},
		{"a step naming no cloud", WithLogger(context.Background(), step, ""),
			`"job":7,"task":1,"attempt":2,"cloud":"aws","cluster":"c1"`},
		{"a step naming the cloud", WithLogger(context.Background(), step.With("cloud", "aws"), "aws"),
			`"job":7,"task":1,"attempt":2,"cloud":"aws","cluster":"c1"`},
		{"a step naming another cloud", WithLogger(context.Background(), step.With("cloud", "gcp"), "gcp"),
			`"cloud":"aws","cluster":"c1"`},
	} {
		line := logLine(t, tc.ctx, &out, own, "aws")
		if !strings.HasSuffix(line, `"msg":"launched",`+tc.want+`}`) {
			t.Errorf("%s: line %s, want it to end in %s", tc.name, line, tc.want)
		}
		if n := strings.Count(line, `"cloud":`); n != 1 {
			t.Errorf("%s: cloud %d times in %s", tc.name, n, line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("%s: not JSON: %v", tc.name, err)
		}
	}
}

// The controller's own lines (cloud "") are the step's as it is.
func TestLoggerWithNoCloudAddsNothing(t *testing.T) {
	var out bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&out, nil))
	ctx := WithLogger(context.Background(), base.With("job", 7), "")
	if line := logLine(t, ctx, &out, base, ""); !strings.HasSuffix(line, `"msg":"launched","job":7,"cluster":"c1"}`) {
		t.Errorf("line %s", line)
	}
	if line := logLine(t, context.Background(), &out, base, ""); !strings.HasSuffix(line, `"msg":"launched","cluster":"c1"}`) {
		t.Errorf("line %s", line)
	}
}
