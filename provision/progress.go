package provision

import "context"

type progressKey struct{}

// WithProgress returns a context under which a provider's Launch tells
// report what it waits for and why (a node that does not answer SSH yet),
// so that the caller can show it while the launch goes on.
func WithProgress(ctx context.Context, report func(msg string)) context.Context {
	return context.WithValue(ctx, progressKey{}, report)
}

// Progress tells the report set by WithProgress on ctx, if any, msg.
func Progress(ctx context.Context, msg string) {
	if report, ok := ctx.Value(progressKey{}).(func(string)); ok && report != nil {
		report(msg)
	}
}
