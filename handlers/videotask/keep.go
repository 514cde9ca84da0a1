package videotask

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/storage"
)

// Defaults of the Keeper's settings.
const (
	DefaultKeepPrefix      = "results/"
	DefaultKeepURLExpires  = time.Hour
	DefaultKeepLease       = time.Minute
	DefaultKeepAttempts    = 8
	DefaultKeepConcurrency = 4
	// DefaultKeepMaxSize bounds one kept object: 2 GiB, far past a generated video (a 15 s
	// 4K video is some hundred MB).
	DefaultKeepMaxSize int64 = 2 << 30
	// DefaultKeepMinRate is the least a source must send per second, over each lease: 64 KiB/s,
	// a 100 MB video in under half an hour.
	DefaultKeepMinRate int64 = 64 << 10
	// DefaultKeepMaxTime bounds one copy attempt.
	DefaultKeepMaxTime = time.Hour
)

// ResultBucket is the operator's bucket that finished tasks' results are copied into
// (presign.S3 is one).
type ResultBucket interface {
	// PutStream stores body under key, streaming it with bounded memory; the object appears
	// whole or not at all.
	PutStream(ctx context.Context, key, contentType string, body io.Reader) (int64, error)
	// PresignGet signs a GET of key valid for expires.
	PresignGet(ctx context.Context, key string, expires time.Duration) (string, error)
	// PublicURL is the object's unsigned address at the bucket's endpoint.
	PublicURL(key string) string
}

// Keeper copies the video and the last frame of every task that succeeds into the operator's
// bucket (the upload block's keep_results), so that a result outlives the provider's short-lived
// URL and never needs the operator's credential. A task whose provider reports success stays
// running to clients until its copy is recorded on the task; then it is succeeded, its answer's
// content.video_url (and last_frame_url) are the kept objects' addresses, and its callback
// fires, carrying them.
//
// The pending copy is recorded on the task record (storage.Task.Keep) by the compare-and-set
// that saw the success, so it survives a crash. One instance copies at a time: it claims the
// copy with a lease on the record, renewed while it copies; a copy whose instance died is taken
// over by the watcher of any instance once the lease runs out. A failed copy is retried with
// backoff, Attempts times; after that the task ends succeeded with the provider's own result,
// as it would have without keep_results, so that no task stays running forever. A copy is
// bounded in time, so that slow sources cannot hold every copy slot: an attempt whose source
// sends less than MinRate over a lease, or that runs past MaxTime, fails. A copy still pending
// when its task runs past the longest execution time (as an unfinished task expires, see
// overdue) is given up at once: the task ends succeeded with the provider's result.
type Keeper struct {
	Bucket ResultBucket
	// Prefix starts every kept object's key. Default: "results/".
	Prefix string
	// PublicBaseURL, when set, is the bucket's public address: an answer carries it joined with
	// the object's key. Without it the bucket is private and every answer carries a fresh
	// presigned GET, valid for URLExpires.
	PublicBaseURL string
	// URLExpires is the life of a presigned GET in an answer (and in a callback). Default: 1h.
	URLExpires time.Duration
	// Lease is how long an instance holds a copy without renewing it; a copy abandoned by a
	// stopped instance is taken over after it. A source that sends nothing for a Lease fails
	// the attempt. Default: 1m.
	Lease time.Duration
	// Attempts bounds the copies tried per task. Default: 8.
	Attempts int
	// Concurrency bounds the copies this instance runs at once; each holds one part
	// (presign.PartSize) in memory. Default: 4.
	Concurrency int
	// MinRate is the least bytes per second a source must send, counted over each lease: a
	// slower one fails the attempt (which is tried again like any failed copy), so that
	// sources that drip a byte at a time cannot hold the copy slots. Default: 64 KiB/s.
	MinRate int64
	// MaxTime bounds one copy attempt, the video and the last frame together: past it the
	// attempt fails. Default: 1h.
	MaxTime time.Duration
	// MaxSize bounds the bytes of one kept object (the video, the last frame). A source that
	// announces more, or sends more, is not kept: the copy stops there (a multipart upload is
	// aborted, so nothing of it stays in the bucket), is not tried again, and the task ends
	// with the provider's own result. Default: DefaultKeepMaxSize.
	MaxSize int64
	// Owner names this instance in the copies' leases. Default: random.
	Owner string

	initOne sync.Once
	mu      sync.Mutex
	running map[string]bool
	slots   chan struct{}
	ctx     context.Context
	stop    context.CancelFunc
}

func (k *Keeper) init() {
	k.initOne.Do(func() {
		if k.Prefix == "" {
			k.Prefix = DefaultKeepPrefix
		}
		if k.URLExpires <= 0 {
			k.URLExpires = DefaultKeepURLExpires
		}
		if k.Lease <= 0 {
			k.Lease = DefaultKeepLease
		}
		if k.Attempts <= 0 {
			k.Attempts = DefaultKeepAttempts
		}
		if k.Concurrency <= 0 {
			k.Concurrency = DefaultKeepConcurrency
		}
		if k.MaxSize <= 0 {
			k.MaxSize = DefaultKeepMaxSize
		}
		if k.MinRate <= 0 {
			k.MinRate = DefaultKeepMinRate
		}
		if k.MaxTime <= 0 {
			k.MaxTime = DefaultKeepMaxTime
		}
		if k.Owner == "" {
			k.Owner = storage.NewClaimToken()
		}
		k.running = map[string]bool{}
		k.slots = make(chan struct{}, k.Concurrency)
		k.ctx, k.stop = context.WithCancel(context.Background())
	})
}

// Stop ends the copies this Keeper runs; each gives its lease back, so another Keeper (the
// next config's, after a reload) takes it over at once.
func (k *Keeper) Stop() {
	k.init()
	k.stop()
}

// errKeeping refuses the cancel of a task whose result is being kept: it is running, and a
// running task cannot be cancelled.
var errKeeping = apierror.New(http.StatusConflict, "task_running", "the task is running and cannot be cancelled: its result is being copied")

// keepJob is a task's kept result as its record stores it (storage.Task.Keep).
type keepJob struct {
	// Answer is the client's answer that the provider's success made, with the provider's
	// result URLs: the copy's sources, and the answer served if the copy is given up.
	Answer json.RawMessage `json:"answer"`
	// Credentialed marks a video that needs the operator's credential: it is read through the
	// task's adaptor (Content), never by its URL (which is the gateway's content endpoint).
	Credentialed bool `json:"credentialed,omitempty"`
	// Base starts the kept objects' keys: the prefix, the task id and a random part, so that a
	// public object's address cannot be guessed from the task id.
	Base string `json:"base"`
	// Owner holds the copy until LeaseUntil (Unix nanoseconds); NextAt is when a failed copy
	// is tried again (Unix nanoseconds); Attempts counts the copies claimed, less those stopped
	// with their Keeper (keepFailed).
	Owner      string `json:"owner,omitempty"`
	LeaseUntil int64  `json:"lease_until,omitempty"`
	NextAt     int64  `json:"next_at,omitempty"`
	Attempts   int    `json:"attempts,omitempty"`
	// Video and LastFrame are the kept objects' keys, set with Kept when the copy is done.
	Video     string `json:"video,omitempty"`
	LastFrame string `json:"last_frame,omitempty"`
	Kept      bool   `json:"kept,omitempty"`
	// GaveUp is set when the copy failed Attempts times: the answer is the provider's.
	GaveUp bool `json:"gave_up,omitempty"`
}

// keepJobOf decodes a record's Keep; false when there is none (or it is unreadable).
func keepJobOf(t storage.Task) (keepJob, bool) {
	if len(t.Keep) == 0 {
		// Before j: decoding moves j to the heap, and the record of every task that is not
		// being kept (the watcher asks of each task it reads) would pay for that.
		return keepJob{}, false
	}
	var j keepJob
	if json.Unmarshal(t.Keep, &j) != nil {
		return j, false
	}
	return j, true
}

// pending reports whether the job's copy is still to be done.
func (j keepJob) pending() bool { return !j.Kept && !j.GaveUp }

// keepPending reports whether t waits for its result to be kept.
func keepPending(t storage.Task) bool {
	j, ok := keepJobOf(t)
	return ok && j.pending()
}

// holdForKeeping is the part of an answer's compare-and-set that, with keep_results, records a
// provider's success as a pending copy instead of finishing the task: the record stays running
// (to clients too) with its answer's content empty, and the success's answer (body) is kept on
// the job. It reports whether it changed cur.
func (h *Handler) holdForKeeping(cur *storage.Task, body json.RawMessage) bool {
	if h.Keep == nil {
		return false
	}
	var answer map[string]json.RawMessage
	if json.Unmarshal(body, &answer) != nil {
		return false
	}
	h.Keep.init()
	credentialed := false
	if cur.UpstreamID != "" {
		var content struct {
			VideoURL string `json:"video_url"`
		}
		// An adaptor's result that needs the credential is answered as the content endpoint
		// (adaptedAnswer), which this same handler has just written.
		credentialed = json.Unmarshal(answer["content"], &content) == nil && content.VideoURL == h.ContentURL(cur.ID)
	}
	job := keepJob{Answer: body, Credentialed: credentialed,
		Base: h.Keep.Prefix + url.PathEscape(cur.ID) + "-" + randomHex(8)}
	answer["status"], answer["content"] = statusJSON[StatusRunning], emptyObjectJSON
	delete(answer, "usage")
	cur.Status, cur.Result, cur.Keep = StatusRunning, mustJSON(answer), mustJSON(job)
	return true
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics where no randomness exists)
	return hex.EncodeToString(b)
}

// clientAnswer is t's answer as a client is served it: the stored one, where a result kept in
// a private bucket gets fresh presigned GETs. The presigned URLs are a credential of the
// object for URLExpires: they are never logged, nor stored on the task; a callback's body
// (notify) carries them, so its event holds them in the store's outbox until it is delivered.
func (h *Handler) clientAnswer(ctx context.Context, t storage.Task) json.RawMessage {
	if len(t.Result) == 0 {
		return recordJSON(t)
	}
	if h.Keep == nil || h.Keep.PublicBaseURL != "" || len(t.Keep) == 0 {
		return t.Result
	}
	j, ok := keepJobOf(t)
	if !ok || !j.Kept {
		return t.Result
	}
	h.Keep.init()
	urls, content := map[string]string{}, answerContent(t.Result)
	for field, key := range map[string]string{"video_url": j.Video, "last_frame_url": j.LastFrame} {
		if s, _ := jsonString(content[field]); key == "" || s == "" {
			continue
		}
		signed, err := h.Keep.Bucket.PresignGet(ctx, key, h.Keep.URLExpires)
		if err != nil {
			// The bucket's credentials could not be had: the answer keeps the unsigned address.
			// The error names no URL (signing failed before there was one).
			h.Logger.Warn("presigning a kept result", zap.String("task_id", t.ID), zap.Error(err))
			return t.Result
		}
		urls[field] = signed
	}
	if signed, ok := withContentURLs(t.Result, urls); ok {
		return signed
	}
	return t.Result
}

// keptURL is the address of a kept object stored in the task's answer: the public one, or the
// object's unsigned address in a private bucket (which clientAnswer signs at each read).
func (k *Keeper) keptURL(key string) string {
	if k.PublicBaseURL != "" {
		parts := strings.Split(key, "/")
		for i, p := range parts {
			parts[i] = url.PathEscape(p)
		}
		return strings.TrimSuffix(k.PublicBaseURL, "/") + "/" + strings.Join(parts, "/")
	}
	return k.Bucket.PublicURL(key)
}
