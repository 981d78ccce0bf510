package aws

import (
	"context"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"

	"sortie/provision"
)

// countCalls is an EC2 client option that tells calls of each API call
// (RunInstances, DescribeInstances, ...) once it returns, the SDK's
// retries of it included, with its error.
func countCalls(calls provision.APICalls) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("sortieCountCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				calls(awsmiddleware.GetOperationName(ctx), err)
				return out, md, err
			}), middleware.After)
	}
}
