package bucket

import (
	"context"
	"errors"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Region is the region a bucket lives in, as S3 tells it in HeadBucket's
// x-amz-bucket-region header, which it sends on a redirect to the
// bucket's region and on a refusal too. ok is false, with no error, when
// the bucket does not exist.
func (s *S3) Region(ctx context.Context, bucket string) (region string, ok bool, err error) {
	out, err := s.Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket})
	if err == nil {
		if r := aws.ToString(out.BucketRegion); r != "" {
			return r, true, nil
		}
		return s.location(ctx, bucket)
	}
	if r := regionHeader(err); r != "" {
		return r, true, nil
	}
	if httpStatus(err) == http.StatusNotFound {
		return "", false, nil
	}
	return "", false, s3Error("read the region of s3://"+bucket, err)
}

// location asks GetBucketLocation, for a store whose HeadBucket does not
// say the region; us-east-1 answers an empty constraint.
func (s *S3) location(ctx context.Context, bucket string) (string, bool, error) {
	loc, err := s.Client.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: &bucket})
	if err != nil {
		return "", false, s3Error("read the region of s3://"+bucket, err)
	}
	if r := string(loc.LocationConstraint); r != "" && r != "EU" {
		return r, true, nil
	} else if r == "EU" {
		return "eu-west-1", true, nil
	}
	return "us-east-1", true, nil
}

// regionHeader is x-amz-bucket-region of the response err came with.
func regionHeader(err error) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get("X-Amz-Bucket-Region")
	}
	return ""
}
