package provision

import "context"

// APICalls is told of each call a provider makes to its cloud's API (EC2,
// Compute Engine): the call's name (RunInstances, InsertInstance) and its
// error, nil when it succeeded. The controller counts them in its metrics.
type APICalls func(call string, err error)

type apiCallsKey struct{}

// WithAPICalls returns a context under which a provider being opened
// reports its API calls to fn for as long as it lives.
func WithAPICalls(ctx context.Context, fn APICalls) context.Context {
	return context.WithValue(ctx, apiCallsKey{}, fn)
}

// APICallsFrom returns what WithAPICalls set on ctx; nil when nothing was.
func APICallsFrom(ctx context.Context) APICalls {
	fn, _ := ctx.Value(apiCallsKey{}).(APICalls)
	return fn
}
