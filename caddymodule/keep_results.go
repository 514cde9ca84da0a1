package caddymodule

import (
	"fmt"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/mediagw/mediagw/handlers/presign"
	"github.com/mediagw/mediagw/handlers/videotask"
)

// KeepResultsConfig keeps every succeeded video task's result in the upload block's bucket:
// the gateway copies the video and the last frame there, and answers content.video_url (and
// last_frame_url) with the kept objects' addresses, so that a result outlives the provider's
// short-lived URL and never needs the operator's credential. A task stays running to its client
// until its copy is recorded; its callback fires after that, carrying the kept addresses.
type KeepResultsConfig struct {
	// Prefix starts every kept object's key, followed by the task id and a random part.
	// Default: "results/".
	Prefix string `json:"prefix,omitempty"`
	// PublicBaseURL is the public address of the bucket (a CDN, or a bucket with a public-read
	// policy): answers carry it joined with the object's key. Without it, the bucket is private
	// and each answer carries a fresh presigned GET.
	PublicBaseURL string `json:"public_base_url,omitempty"`
	// URLExpires is the life of a presigned GET in an answer or a callback. Default: 1h. At most
	// 7 days (S3's limit).
	URLExpires caddy.Duration `json:"url_expires,omitempty"`
	// Lease is how long an instance holds a copy without renewing it: a copy left by a stopped
	// or killed instance is taken over by another after it, and a source that sends nothing for
	// that long fails the attempt. Default: 1m.
	Lease caddy.Duration `json:"lease,omitempty"`
	// Attempts bounds the copies tried per task, with backoff between them (2s, 4s, 8s … at most
	// 5m); after the last, the task ends succeeded with the provider's own result. Default: 8.
	Attempts int `json:"attempts,omitempty"`
	// Concurrency bounds the copies one instance runs at once; each holds one 8 MiB part in
	// memory. Default: 4.
	Concurrency int `json:"concurrency,omitempty"`
	// MaxSize bounds the bytes of one kept object, in bytes: a result that announces or sends
	// more is not kept (nothing of it stays in the bucket, it is not tried again) and the task
	// ends with the provider's own result. Default: 2 GiB.
	MaxSize int64 `json:"max_size,omitempty"`
	// MinRate is the least a result's source must send, in bytes per second, counted over each
	// lease: a slower source fails the attempt (retried with backoff, as any failed copy), so
	// that sources that drip a byte at a time cannot hold every copy slot. Default: 64 KiB/s.
	MinRate int64 `json:"min_rate,omitempty"`
	// MaxTime bounds one copy attempt (the video and the last frame): past it the attempt fails
	// and is retried with backoff, as any failed copy. Default: 1h.
	MaxTime caddy.Duration `json:"max_time,omitempty"`
}

// maxPresignedGet is S3's longest presigned URL life (a GET's or a PUT's).
const maxPresignedGet = 7 * 24 * time.Hour

// provisionKeeper prepares the copy of results into the upload bucket, when keep_results is
// set; the task runtime and every mediagw_video_tasks handler share it.
func (a *App) provisionKeeper(repl *caddy.Replacer, bucket *presign.S3) error {
	k := a.Upload.KeepResults
	if k == nil {
		return nil
	}
	publicBaseURL, err := expandRequired(repl, "upload keep_results public_base_url", k.PublicBaseURL)
	if err != nil {
		return err
	}
	if u, err := url.Parse(publicBaseURL); publicBaseURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return fmt.Errorf("upload keep_results public_base_url must be an absolute http(s) URL, such as https://cdn.example.com/results")
	}
	if time.Duration(k.URLExpires) > maxPresignedGet {
		return fmt.Errorf("upload keep_results url_expires %s: at most 7d, the longest a presigned URL lives", time.Duration(k.URLExpires))
	}
	if k.Attempts < 0 || k.Concurrency < 0 || k.Lease < 0 || k.URLExpires < 0 || k.MaxSize < 0 || k.MinRate < 0 || k.MaxTime < 0 {
		return fmt.Errorf("upload keep_results: attempts, concurrency, lease, url_expires, max_size, min_rate and max_time must be positive")
	}
	a.uploads.keeper = &videotask.Keeper{
		Bucket: bucket, Prefix: k.Prefix, PublicBaseURL: publicBaseURL,
		URLExpires: time.Duration(k.URLExpires), Lease: time.Duration(k.Lease),
		Attempts: k.Attempts, Concurrency: k.Concurrency, MaxSize: k.MaxSize,
		MinRate: k.MinRate, MaxTime: time.Duration(k.MaxTime),
	}
	return nil
}

// keeper is the provisioned Keeper, or nil without keep_results.
func (a *App) keeper() *videotask.Keeper {
	if a.uploads == nil {
		return nil
	}
	return a.uploads.keeper
}

// Interface guards
var _ videotask.ResultBucket = (*presign.S3)(nil)
