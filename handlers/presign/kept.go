package presign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// PartSize is the size of each part of a streamed object (PutStream): the memory one copy
// holds. S3 takes parts of 5 MiB to 5 GiB and at most 10,000 of them, so an object of up to
// 80 GB streams in parts of this size.
const PartSize = 8 << 20

// PutStream stores what body yields under objectKey with the given Content-Type, and answers
// how many bytes it stored. It reads body part by part (PartSize) and never holds more than one
// part: a body that fits in one part is a single PutObject, a longer one a multipart upload,
// which is aborted when anything fails, so that a failed copy leaves no parts behind. The
// object appears whole or not at all.
func (s *S3) PutStream(ctx context.Context, objectKey, contentType string, body io.Reader) (int64, error) {
	buf := make([]byte, PartSize)
	n, err := io.ReadFull(body, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(s.cfg.Bucket), Key: aws.String(objectKey), ContentType: aws.String(contentType),
			Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
		})
		return int64(n), err
	}
	if err != nil {
		return 0, err
	}
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.cfg.Bucket), Key: aws.String(objectKey), ContentType: aws.String(contentType),
	})
	if err != nil {
		return 0, err
	}
	total, err := s.putParts(ctx, objectKey, created.UploadId, buf, n, body)
	if err == nil {
		return total, nil
	}
	// The parts uploaded so far are dropped, also when ctx ended (a lost lease, a stop).
	abortCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, abortErr := s.client.AbortMultipartUpload(abortCtx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.cfg.Bucket), Key: aws.String(objectKey), UploadId: created.UploadId,
	}); abortErr != nil {
		return total, fmt.Errorf("%w (and aborting the multipart upload: %v)", err, abortErr)
	}
	return total, err
}

// putParts uploads the first part (buf[:n]) and then the rest of body, one part at a time, and
// completes the multipart upload.
func (s *S3) putParts(ctx context.Context, objectKey string, uploadID *string, buf []byte, n int, body io.Reader) (int64, error) {
	var parts []types.CompletedPart
	var total int64
	for number := int32(1); n > 0; number++ {
		part, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: aws.String(s.cfg.Bucket), Key: aws.String(objectKey), UploadId: uploadID,
			PartNumber: aws.Int32(number), Body: bytes.NewReader(buf[:n]), ContentLength: aws.Int64(int64(n)),
		})
		if err != nil {
			return total, err
		}
		parts = append(parts, types.CompletedPart{ETag: part.ETag, PartNumber: aws.Int32(number)})
		total += int64(n)
		n, err = io.ReadFull(body, buf)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return total, err
		}
	}
	_, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(s.cfg.Bucket), Key: aws.String(objectKey), UploadId: uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	return total, err
}

// PresignGet signs a GET of objectKey valid for expires: the address of a kept object in a
// private bucket. Such a URL is a credential for as long as it lives: it is handed to the
// object's owner and never logged.
func (s *S3) PresignGet(ctx context.Context, objectKey string, expires time.Duration) (string, error) {
	req, err := s.presigner.PresignGetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.cfg.Bucket), Key: aws.String(objectKey),
	}, s3.WithPresignExpires(expires))
	if err != nil {
		return "", err
	}
	return req.URL, nil
}
