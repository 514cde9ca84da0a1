package presign

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Config locates an S3-compatible bucket.
type S3Config struct {
	Bucket string
	// Region is the bucket's region. Default: us-east-1.
	Region string
	// Endpoint is the base URL of an S3-compatible service; empty means AWS S3.
	Endpoint string
	// PathStyle addresses the bucket as endpoint/bucket/key instead of bucket.endpoint/key.
	PathStyle bool
	// AccessKeyID and SecretAccessKey are static credentials. When both are empty, the AWS
	// default chain is used (environment, shared config files, instance or task role).
	AccessKeyID, SecretAccessKey string
}

// S3 presigns uploads to one bucket with aws-sdk-go-v2.
type S3 struct {
	cfg       S3Config
	client    *s3.Client
	presigner *s3.PresignClient
}

// NewS3 prepares a presigner. It makes no network call: credentials from the default chain are
// resolved when the first URL is signed.
func NewS3(ctx context.Context, c S3Config) (*S3, error) {
	if c.Bucket == "" {
		return nil, fmt.Errorf("upload: bucket is required")
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		return nil, fmt.Errorf("upload: give both access_key_id and secret_access_key, or neither")
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(c.Region)}
	if c.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("upload: loading AWS configuration: %v", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		// A presigned PUT must not pin a checksum of a body the SDK never sees.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	return &S3{cfg: c, client: client, presigner: s3.NewPresignClient(client)}, nil
}

// PresignPut signs a PUT of objectKey whose Content-Type must be contentType. The returned
// headers are the ones the upload has to send (Host excluded: every client sets it).
func (s *S3) PresignPut(ctx context.Context, objectKey, contentType string, expires time.Duration) (string, http.Header, error) {
	req, err := s.presigner.PresignPutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.cfg.Bucket),
		Key:         aws.String(objectKey),
		ContentType: aws.String(contentType),
	}, s3.WithPresignExpires(expires))
	if err != nil {
		return "", nil, err
	}
	headers := http.Header{}
	for k, v := range req.SignedHeader {
		if !strings.EqualFold(k, "Host") {
			headers[http.CanonicalHeaderKey(k)] = v
		}
	}
	return req.URL, headers, nil
}

// PublicURL is the object's unsigned address, used when no public_base_url is configured.
func (s *S3) PublicURL(objectKey string) string {
	if s.cfg.Endpoint == "" {
		return fmt.Sprintf("https://%s.s3.%s.amazonaws.com/%s", s.cfg.Bucket, s.cfg.Region, escapeKey(objectKey))
	}
	u, err := url.Parse(s.cfg.Endpoint)
	if err != nil {
		return ""
	}
	if s.cfg.PathStyle {
		return strings.TrimSuffix(u.String(), "/") + "/" + s.cfg.Bucket + "/" + escapeKey(objectKey)
	}
	u.Host = s.cfg.Bucket + "." + u.Host
	return strings.TrimSuffix(u.String(), "/") + "/" + escapeKey(objectKey)
}

// escapeKey escapes each path segment of an object key.
func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
