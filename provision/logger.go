package provision

import (
	"context"
	"log/slog"
)

type loggerKey struct{}

// stepLogger is what WithLogger puts in a context.
type stepLogger struct {
	log   *slog.Logger
	cloud string // the cloud log's lines name already, "" when none
}

// WithLogger returns ctx carrying l, the logger of the step the calls made
// under ctx are for: the controller's logger with the fields of a job's
// attempt (job, task, attempt). cloud is the value of the `cloud` field l
// already carries, "" when it carries none.
func WithLogger(ctx context.Context, l *slog.Logger, cloud string) context.Context {
	return context.WithValue(ctx, loggerKey{}, stepLogger{log: l, cloud: cloud})
}

// Logger is the logger of the step a call is made for, set on ctx by
// WithLogger; providers log through it when present, so that their lines
// about one attempt's cluster (its launch, status, termination) carry the
// attempt's fields. A provider passes its own logger as fallback, used when
// ctx carries no step's logger, and its cloud's name, which is added as the
// `cloud` field to a step's logger that carries none: a line names its
// cloud once. cloud "" adds nothing. A step's logger that names another
// cloud than cloud is not used (the call is not about the step's cluster).
//
// Calls that answer for many jobs at once (a batched status, a sweep of
// what crashes left) log through the provider's own logger instead.
func Logger(ctx context.Context, fallback *slog.Logger, cloud string) *slog.Logger {
	s, ok := ctx.Value(loggerKey{}).(stepLogger)
	if !ok || s.log == nil {
		return fallback
	}
	switch {
	case cloud == "" || s.cloud == cloud:
		return s.log
	case s.cloud == "":
		return s.log.With("cloud", cloud)
	default:
		return fallback
	}
}
