package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3 is a Store on Amazon S3 or anything that speaks its API. Each
// bucket is reached in its own region, which may not be the client's.
type S3 struct {
	Client *s3.Client
	tm     *transfermanager.Client

	mu       sync.Mutex
	regional map[string]*S3 // bucket -> the store in its region
}

// NewS3 opens S3 with the standard credential chain and endpoint settings
// (AWS_ENDPOINT_URL_S3 for an S3-compatible store, which is then addressed
// by path, as emulators and most compatible stores want). With no region
// configured, us-east-1.
func NewS3(ctx context.Context) (*S3, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS credentials: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	pathStyle := os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle })
	return NewS3Client(c), nil
}

// NewS3Client is a Store on an S3 client.
func NewS3Client(c *s3.Client) *S3 {
	return &S3{Client: c, tm: transfermanager.New(c)}
}

// in is the store of the bucket's region: S3 answers a request signed
// for another region with a redirect the SDK does not follow. A bucket
// whose region cannot be read (missing, or a store that does not say)
// is asked with the client's own.
func (s *S3) in(ctx context.Context, bucket string) *S3 {
	s.mu.Lock()
	r, ok := s.regional[bucket]
	s.mu.Unlock()
	if ok {
		return r
	}
	region, found, err := s.Region(ctx, bucket)
	if err != nil || !found {
		return s
	}
	r = s
	if region != s.Client.Options().Region {
		r = NewS3Client(s3.New(s.Client.Options(), func(o *s3.Options) { o.Region = region }))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.regional == nil {
		s.regional = map[string]*S3{}
	}
	s.regional[bucket] = r
	return r
}

func (s *S3) List(ctx context.Context, bucket, prefix string) ([]Object, error) {
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.in(ctx, bucket).Client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s3Error("list s3://"+bucket+"/"+prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), ETag: strings.Trim(aws.ToString(o.ETag), `"`), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return out, nil
}

func (s *S3) Get(ctx context.Context, bucket, key string, w io.WriterAt) error {
	_, err := s.in(ctx, bucket).tm.DownloadObject(ctx, &transfermanager.DownloadObjectInput{Bucket: &bucket, Key: &key, WriterAt: w})
	return s3Error("download s3://"+bucket+"/"+key, err)
}

func (s *S3) Put(ctx context.Context, bucket, key string, r io.Reader, size int64) (string, error) {
	out, err := s.in(ctx, bucket).tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: &bucket, Key: &key, Body: r})
	if err != nil {
		return "", s3Error("upload s3://"+bucket+"/"+key, err)
	}
	return strings.Trim(aws.ToString(out.ETag), `"`), nil
}

func (s *S3) Exists(ctx context.Context, bucket string) (bool, error) {
	_, err := s.in(ctx, bucket).Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket})
	if err == nil {
		return true, nil
	}
	var nf *types.NotFound
	var nb *types.NoSuchBucket
	if errors.As(err, &nf) || errors.As(err, &nb) || httpStatus(err) == http.StatusNotFound {
		return false, nil
	}
	return false, s3Error("read s3://"+bucket, err)
}

func (s *S3) Create(ctx context.Context, bucket string) error {
	return s.CreateIn(ctx, bucket, "")
}

// CreateIn makes the bucket in region ("" is the client's): a storage
// mount's new bucket goes where the cluster is.
func (s *S3) CreateIn(ctx context.Context, bucket, region string) error {
	if region == "" {
		region = s.Client.Options().Region
	}
	in := &s3.CreateBucketInput{Bucket: &bucket}
	if region != "" && region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(region)}
	}
	_, err := s.Client.CreateBucket(ctx, in, func(o *s3.Options) {
		if region != "" {
			o.Region = region
		}
	})
	var owned *types.BucketAlreadyOwnedByYou
	if errors.As(err, &owned) {
		return nil
	}
	return s3Error("create s3://"+bucket, err)
}

func (s *S3) Delete(ctx context.Context, bucket string) error {
	objs, err := s.List(ctx, bucket, "")
	if err != nil {
		return err
	}
	for len(objs) > 0 {
		n := min(len(objs), 1000)
		ids := make([]types.ObjectIdentifier, n)
		for i, o := range objs[:n] {
			ids[i] = types.ObjectIdentifier{Key: aws.String(o.Key)}
		}
		if _, err := s.in(ctx, bucket).Client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}}); err != nil {
			return s3Error("empty s3://"+bucket, err)
		}
		objs = objs[n:]
	}
	_, err = s.in(ctx, bucket).Client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket})
	return s3Error("delete s3://"+bucket, err)
}

// s3Error wraps err with what was done, and ErrDenied for a 403.
func s3Error(what string, err error) error {
	if err == nil {
		return nil
	}
	if httpStatus(err) == http.StatusForbidden {
		return fmt.Errorf("%s: %w (%v)", what, ErrDenied, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "AllAccessDisabled") {
		return fmt.Errorf("%s: %w (%v)", what, ErrDenied, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
