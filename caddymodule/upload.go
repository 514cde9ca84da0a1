package caddymodule

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/presign"
	"github.com/mediagw/mediagw/handlers/videotask"
)

// UploadConfig configures presigned direct uploads to S3-compatible storage (POST
// /v1/upload/presign). Without it, presign answers 503 upload_service_unavailable.
type UploadConfig struct {
	// Bucket receives the uploads. Required.
	Bucket string `json:"bucket"`
	// Region of the bucket. Default: us-east-1.
	Region string `json:"region,omitempty"`
	// Endpoint is the base URL of an S3-compatible service (MinIO, versitygw, R2 …).
	// Default: AWS S3.
	Endpoint string `json:"endpoint,omitempty"`
	// PathStyle addresses objects as endpoint/bucket/key (needed by most S3-compatible servers).
	PathStyle bool `json:"path_style,omitempty"`
	// AccessKeyID and SecretAccessKey are static credentials, written as {env.*} or {file.*}.
	// When both are omitted the AWS default chain is used (environment, shared config, instance
	// or task role).
	AccessKeyID     string `json:"access_key_id,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	// PublicBaseURL is joined with the object key to make public_url, e.g. a CDN in front of the
	// bucket. Default: the object's address at the endpoint.
	PublicBaseURL string `json:"public_base_url,omitempty"`
	// Prefix starts every object key. Default: none.
	Prefix string `json:"prefix,omitempty"`
	// Expires is the life of a presigned URL, from 1s to 7d (S3's bounds). Default: 15m.
	Expires caddy.Duration `json:"expires,omitempty"`
	// AllowedContentTypes restricts content_type, e.g. ["image/*", "video/mp4"]. Default: any.
	AllowedContentTypes []string `json:"allowed_content_types,omitempty"`
	// RateLimit bounds presign calls per API key. Default: from UPLOAD_RATE_LIMIT_ENABLE
	// (true), UPLOAD_RATE_LIMIT (100) and UPLOAD_RATE_LIMIT_DURATION (60 seconds).
	RateLimit *UploadRateLimit `json:"rate_limit,omitempty"`
	// KeepResults copies every succeeded video task's result into this bucket and answers its
	// address. Default: off (answers carry the provider's result URLs).
	KeepResults *KeepResultsConfig `json:"keep_results,omitempty"`
}

// UploadRateLimit is a sliding-window limit: at most Requests presign calls per API key in any
// Window. Refused calls do not count.
type UploadRateLimit struct {
	// Disabled turns the limit off.
	Disabled bool `json:"disabled,omitempty"`
	// Requests is the number of calls allowed per window.
	Requests int `json:"requests,omitempty"`
	// Window is the length of the sliding window.
	Window caddy.Duration `json:"window,omitempty"`
}

// uploads is what the app provisions for mediagw_presign.
type uploads struct {
	handler presign.Handler
	// keeper copies results into the bucket (keep_results); nil without it.
	keeper *videotask.Keeper
}

// provisionUploads prepares the presigner and the rate limit, whose windows are kept in the
// store (so they survive reloads and are shared by gateways on one store). Call it after
// openStore.
func (a *App) provisionUploads(repl *caddy.Replacer) error {
	a.uploads = &uploads{}
	limit, err := a.uploadRateLimit()
	if err != nil {
		return err
	}
	if !limit.Disabled {
		a.uploads.handler.Limit = &presign.RateLimit{Requests: limit.Requests, Window: time.Duration(limit.Window), Windows: a.store}
	}
	u := a.Upload
	if u == nil {
		return nil // presign answers 503
	}
	// A placeholder that comes out empty is refused: an unset S3_ACCESS_KEY_ID would otherwise
	// fall back to the AWS default chain, and an unset endpoint to AWS itself.
	var endpoint, accessKeyID, secretAccessKey, publicBaseURL string
	for _, v := range []struct {
		option, raw string
		dst         *string
	}{
		{"upload endpoint", u.Endpoint, &endpoint},
		{"upload access_key_id", u.AccessKeyID, &accessKeyID},
		{"upload secret_access_key", u.SecretAccessKey, &secretAccessKey},
		{"upload public_base_url", u.PublicBaseURL, &publicBaseURL},
	} {
		if *v.dst, err = expandRequired(repl, v.option, v.raw); err != nil {
			return err
		}
	}
	for _, v := range []struct{ option, value, example string }{
		{"upload endpoint", endpoint, "http://127.0.0.1:7070 or https://s3.us-east-1.amazonaws.com"},
		{"upload public_base_url", publicBaseURL, "https://cdn.example.com/media"},
	} {
		if u, err := url.Parse(v.value); v.value != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			return fmt.Errorf("%s must be an absolute http(s) URL, such as %s", v.option, v.example)
		}
	}
	// A presigned URL is signed to live whole seconds, at most a week (SigV4): storage refuses
	// every upload made with a URL outside that, so the config is refused instead.
	if life := time.Duration(u.Expires); life != 0 && (life < time.Second || life > maxPresignedGet) {
		return fmt.Errorf("upload expires %s: a presigned URL lives from 1s to 7d (storage refuses uploads with any other)", life)
	}
	s3, err := presign.NewS3(context.Background(), presign.S3Config{
		Bucket:          u.Bucket,
		Region:          u.Region,
		Endpoint:        endpoint,
		PathStyle:       u.PathStyle,
		AccessKeyID:     accessKeyID,
		SecretAccessKey: secretAccessKey,
	})
	if err != nil {
		return err
	}
	h := &a.uploads.handler
	h.Storage, h.PublicBaseURL, h.Prefix = s3, publicBaseURL, u.Prefix
	h.Expires, h.AllowedContentTypes = time.Duration(u.Expires), u.AllowedContentTypes
	return a.provisionKeeper(repl, s3)
}

// uploadRateLimit is the configured limit, or the one from the environment.
func (a *App) uploadRateLimit() (UploadRateLimit, error) {
	if a.Upload != nil && a.Upload.RateLimit != nil {
		l := *a.Upload.RateLimit
		if !l.Disabled && (l.Requests < 1 || l.Window <= 0) {
			return l, fmt.Errorf("upload rate_limit needs a positive count and window")
		}
		return l, nil
	}
	l := UploadRateLimit{Requests: 100, Window: caddy.Duration(time.Minute)}
	if s := os.Getenv("UPLOAD_RATE_LIMIT_ENABLE"); s != "" {
		on, err := strconv.ParseBool(s)
		if err != nil {
			return l, fmt.Errorf("UPLOAD_RATE_LIMIT_ENABLE=%q: want true or false", s)
		}
		l.Disabled = !on
	}
	if s := os.Getenv("UPLOAD_RATE_LIMIT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return l, fmt.Errorf("UPLOAD_RATE_LIMIT=%q: want a positive integer", s)
		}
		l.Requests = n
	}
	if s := os.Getenv("UPLOAD_RATE_LIMIT_DURATION"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return l, fmt.Errorf("UPLOAD_RATE_LIMIT_DURATION=%q: want a positive number of seconds", s)
		}
		l.Window = caddy.Duration(time.Duration(n) * time.Second)
	}
	return l, nil
}
