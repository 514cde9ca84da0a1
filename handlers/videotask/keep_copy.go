package videotask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/internal/bounded"
	"github.com/mediagw/mediagw/storage"
)

// keepSoon starts the copy of t's result in the background when it is due here: pending, not
// leased by another instance, past its backoff, not already running in this process, and a
// copy slot is free. Otherwise it does nothing: the watcher offers the task again at its next
// poll. Without a Keeper (keep_results removed from the config), or past the task's longest
// execution time (overdue), a pending copy is given up at once, so the task ends with the
// provider's result.
func (h *Handler) keepSoon(t storage.Task) {
	j, ok := keepJobOf(t)
	if !ok || !j.pending() {
		return
	}
	if h.Keep == nil || h.overdue(t) {
		if _, err := h.keepAbandoned(context.Background(), t); err != nil {
			h.Logger.Error("ending a task whose result was to be kept", zap.String("task_id", t.ID), zap.Error(err))
		}
		return
	}
	k := h.Keep
	k.init()
	now := h.now().UnixNano()
	if j.NextAt > now || (j.Owner != "" && j.Owner != k.Owner && j.LeaseUntil > now) || k.ctx.Err() != nil {
		return
	}
	k.mu.Lock()
	if k.running[t.ID] {
		k.mu.Unlock()
		return
	}
	select {
	case k.slots <- struct{}{}:
	default:
		k.mu.Unlock()
		return
	}
	k.running[t.ID] = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.running, t.ID)
			k.mu.Unlock()
			<-k.slots
		}()
		h.keepTask(k, t.ID)
	}()
}

// keepAbandoned ends a pending copy that no Keeper will do (keep_results was removed from the
// config), or that ran past the task's longest execution time (a copy still running is then
// stopped by its lease renewal): the task ends succeeded with the provider's result. It answers
// the stored record.
func (h *Handler) keepAbandoned(ctx context.Context, t storage.Task) (storage.Task, error) {
	if h.Keep != nil {
		h.Logger.Warn("giving up a result copy: the task ran past the longest execution time; it ends with the provider's result",
			zap.String("task_id", t.ID))
	}
	stored, err := h.keepDone(ctx, nil, t.ID, "", func(j *keepJob) { j.GaveUp = true })
	switch {
	case err != nil:
		return t, err
	case stored.ID == "":
		return t, errTaskNotExist // deleted meanwhile
	}
	return storedAnswer(stored), nil
}

// keepTask claims the copy of one task for k, copies its result and records the outcome.
func (h *Handler) keepTask(k *Keeper, taskID string) {
	t, j, won, err := h.claimKeep(k.ctx, k, taskID)
	if err != nil || !won {
		if err != nil && k.ctx.Err() == nil {
			h.Logger.Error("claiming a result copy", zap.String("task_id", taskID), zap.Error(err))
		}
		return
	}
	ctx, cancel := context.WithCancelCause(k.ctx)
	defer cancel(nil)
	ctx, stop := context.WithTimeoutCause(ctx, k.MaxTime, errKeepTooLong)
	defer stop()
	var progress atomic.Int64
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		h.renewKeep(ctx, k, cancel, taskID, &progress)
	}()
	video, lastFrame, err := h.copyResult(ctx, k, t, j, &progress)
	cancel(nil)
	<-renewed
	if err == nil {
		_, err = h.keepDone(context.WithoutCancel(ctx), k, taskID, k.Owner, func(j *keepJob) {
			j.Kept, j.Video, j.LastFrame = true, video, lastFrame
		})
		if err != nil {
			h.Logger.Error("recording a kept result", zap.String("task_id", taskID), zap.Error(err))
		}
		return
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause // a lost lease or a stalled source says more than the interrupted copy
	}
	attempts := j.Attempts
	if errors.Is(err, errKeepTooLarge) || errors.Is(err, upstream.ErrNotPublic) {
		// The same source is as large, and its address as private, at every attempt.
		attempts = k.Attempts
	}
	h.keepFailed(k, taskID, attempts, err)
}

var (
	errKeepTooLarge  = errors.New("the result is larger than keep_results max_size")
	errKeepLeaseLost = errors.New("another instance took the copy over")
	errKeepStalled   = errors.New("the result's source sent nothing for a lease")
	errKeepTooSlow   = errors.New("the result's source sent less than keep_results min_rate over a lease")
	errKeepTooLong   = errors.New("the copy ran past keep_results max_time")
)

// claimKeep takes the copy of a task by compare-and-set: a pending job that no other instance
// holds a live lease on and whose backoff has passed. It answers the record and job as claimed.
func (h *Handler) claimKeep(ctx context.Context, k *Keeper, taskID string) (storage.Task, keepJob, bool, error) {
	var claimed keepJob
	won := false
	t, err := storage.UpdateTask(ctx, h.Store, taskID, func(cur *storage.Task) error {
		won = false
		j, ok := keepJobOf(*cur)
		now := h.now()
		if !ok || !j.pending() || j.NextAt > now.UnixNano() || (j.Owner != "" && j.Owner != k.Owner && j.LeaseUntil > now.UnixNano()) {
			return storage.ErrNoChange
		}
		j.Owner, j.LeaseUntil = k.Owner, now.Add(k.Lease).UnixNano()
		j.Attempts++
		cur.Keep = mustJSON(j)
		claimed, won = j, true
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return t, claimed, false, nil
	}
	return t, claimed, won, err
}

// renewKeep renews the copy's lease every third of a Lease until ctx ends, and cancels the
// copy when the lease was lost, the source sent nothing since the last renewal but one, or it
// sent less than MinRate over the last Lease.
func (h *Handler) renewKeep(ctx context.Context, k *Keeper, cancel context.CancelCauseFunc, taskID string, progress *atomic.Int64) {
	tick := time.NewTicker(k.Lease / 3)
	defer tick.Stop()
	last, idle := progress.Load(), 0
	// seen holds the progress at the last three ticks: the bytes of the last Lease.
	var seen [3]int64
	least := leastPerLease(k.MinRate, k.Lease)
	for ticks := 0; ; ticks++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n := progress.Load()
		if n != last {
			last, idle = n, 0
		} else if idle++; idle >= 3 {
			cancel(errKeepStalled)
			return
		}
		if ticks >= 3 && n-seen[ticks%3] < least {
			cancel(errKeepTooSlow)
			return
		}
		seen[ticks%3] = n
		lost := false
		_, err := storage.UpdateTask(ctx, h.Store, taskID, func(cur *storage.Task) error {
			j, ok := keepJobOf(*cur)
			if lost = !ok || !j.pending() || j.Owner != k.Owner; lost {
				return storage.ErrNoChange
			}
			j.LeaseUntil = h.now().Add(k.Lease).UnixNano()
			cur.Keep = mustJSON(j)
			return nil
		})
		if lost || errors.Is(err, storage.ErrNotFound) {
			cancel(errKeepLeaseLost)
			return
		}
		if err != nil && ctx.Err() == nil {
			h.Logger.Warn("renewing a result copy's lease", zap.String("task_id", taskID), zap.Error(err))
		}
	}
}

// leastPerLease is the bytes a source sending minRate bytes a second sends in a lease, at least
// 1 and at most math.MaxInt64 (a rate and a lease too large to multiply ask for more than any
// source sends).
func leastPerLease(minRate int64, lease time.Duration) int64 {
	ms := max(int64(lease/time.Millisecond), 1)
	if minRate > math.MaxInt64/ms {
		return math.MaxInt64
	}
	return max(minRate*ms/1000, 1)
}

// keepFailed records a failed copy: the lease is given back and the next attempt is due after a
// backoff; after the last attempt the task ends with the provider's result. A copy stopped with
// its Keeper (a reload, a shutdown) gives its lease and its attempt back and is due again at once.
func (h *Handler) keepFailed(k *Keeper, taskID string, attempts int, cause error) {
	ctx := context.WithoutCancel(k.ctx)
	stopped := k.ctx.Err() != nil
	if !stopped && attempts >= k.Attempts {
		h.Logger.Error("result copy given up; the task ends with the provider's result",
			zap.String("task_id", taskID), zap.Int("attempts", attempts), zap.Error(cause))
		if _, err := h.keepDone(ctx, k, taskID, k.Owner, func(j *keepJob) { j.GaveUp = true }); err != nil {
			h.Logger.Error("ending a task whose result copy was given up", zap.String("task_id", taskID), zap.Error(err))
		}
		return
	}
	if !stopped {
		h.Logger.Warn("result copy failed; it will be tried again", zap.String("task_id", taskID),
			zap.Int("attempt", attempts), zap.Error(cause))
	}
	_, err := storage.UpdateTask(ctx, h.Store, taskID, func(cur *storage.Task) error {
		j, ok := keepJobOf(*cur)
		if !ok || !j.pending() || j.Owner != k.Owner {
			return storage.ErrNoChange
		}
		j.Owner, j.LeaseUntil, j.NextAt = "", 0, 0
		if stopped {
			// Not a failed copy: its claim is given back with its lease, so that reloads during
			// a long copy do not use up the attempts and end the task with the provider's URL.
			j.Attempts = max(j.Attempts-1, 0)
		} else {
			j.NextAt = h.now().Add(keepBackoff(attempts)).UnixNano()
		}
		cur.Keep = mustJSON(j)
		return nil
	})
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		h.Logger.Error("recording a failed result copy", zap.String("task_id", taskID), zap.Error(err))
	}
}

// keepBackoff is the wait after the attempts-th failed copy: 2s, 4s, 8s … at most 5 minutes.
func keepBackoff(attempts int) time.Duration {
	return min(2*time.Second<<min(max(attempts-1, 0), 10), 5*time.Minute)
}

// keepDone ends a pending copy by compare-and-set (held by owner, when not empty): done sets the
// job's outcome, the task becomes succeeded with the answer the outcome makes (k's addresses of
// a kept result; k is nil only for a copy given up), and whoever stores that change settles the
// task's hold and queues its callback, once.
func (h *Handler) keepDone(ctx context.Context, k *Keeper, taskID, owner string, done func(*keepJob)) (storage.Task, error) {
	var finished, notify bool
	stored, err := storage.UpdateTask(ctx, h.Store, taskID, func(cur *storage.Task) error {
		finished, notify = false, false
		j, ok := keepJobOf(*cur)
		if !ok || !j.pending() || (owner != "" && j.Owner != "" && j.Owner != owner) {
			return storage.ErrNoChange
		}
		done(&j)
		j.Owner, j.LeaseUntil = "", 0
		answer := j.Answer
		if j.Kept {
			answer = k.keptAnswer(j)
		}
		cur.Status, cur.Result, cur.Keep = StatusSucceeded, answer, mustJSON(j)
		cur.UpdatedAt, cur.RefreshedAt = h.now().Unix(), h.now().UnixNano()
		notify = h.markNotified(cur)
		finished = h.markFinished(cur, notify)
		return nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		return stored, nil // deleted meanwhile
	}
	if err != nil {
		return stored, err
	}
	if finished {
		h.finishEffects(ctx, stored) // the callback with them
	} else if notify {
		h.notify(ctx, stored)
	}
	return stored, nil
}

// keptAnswer is the job's answer with the kept objects' addresses as its content URLs.
func (k *Keeper) keptAnswer(j keepJob) json.RawMessage {
	urls := map[string]string{"video_url": k.keptURL(j.Video)}
	if j.LastFrame != "" {
		urls["last_frame_url"] = k.keptURL(j.LastFrame)
	}
	if kept, ok := withContentURLs(j.Answer, urls); ok {
		return kept
	}
	return j.Answer
}

// copyResult copies the job's video and last frame (when the answer has one) into the bucket,
// and answers their keys.
func (h *Handler) copyResult(ctx context.Context, k *Keeper, t storage.Task, j keepJob, progress *atomic.Int64) (video, lastFrame string, err error) {
	var answer struct {
		Content struct {
			VideoURL     string `json:"video_url"`
			LastFrameURL string `json:"last_frame_url"`
		} `json:"content"`
	}
	if err := json.Unmarshal(j.Answer, &answer); err != nil || answer.Content.VideoURL == "" {
		return "", "", fmt.Errorf("the task's answer has no content.video_url")
	}
	if video, err = h.copyObject(ctx, k, t, answer.Content.VideoURL, j.Credentialed, j.Base+"/video", progress); err != nil {
		return "", "", fmt.Errorf("copying the video: %w", err)
	}
	if answer.Content.LastFrameURL != "" {
		if lastFrame, err = h.copyObject(ctx, k, t, answer.Content.LastFrameURL, false, j.Base+"/last_frame", progress); err != nil {
			return "", "", fmt.Errorf("copying the last frame: %w", err)
		}
	}
	return video, lastFrame, nil
}

// copyObject streams one result into the bucket under base and the extension of its type, and
// answers the key. A credentialed result is opened through the task's adaptor with the
// operator's credential; any other by its URL, without it (see upstream.Client.Open).
func (h *Handler) copyObject(ctx context.Context, k *Keeper, t storage.Task, source string, credentialed bool, base string, progress *atomic.Int64) (string, error) {
	u, ok := h.boundUpstream(t)
	if !ok {
		return "", errors.New("the task's upstream is no longer configured")
	}
	var resp *http.Response
	var err error
	if credentialed {
		a, ok := h.taskAdaptor(t)
		if !ok {
			return "", errors.New("the task's provider no longer has its protocol")
		}
		resp, err = h.openResult(ctx, a, u, t)
	} else {
		resp, err = h.caller(u).Open(ctx, source)
	}
	if err != nil {
		return "", err
	}
	defer func() {
		if err := resp.Body.Close(); err != nil {
			h.Logger.Debug("closing a result's source", zap.String("task_id", t.ID), zap.Error(err))
		}
	}()
	if resp.ContentLength > k.MaxSize {
		return "", fmt.Errorf("%w: the source announced %d bytes", errKeepTooLarge, resp.ContentLength)
	}
	contentType := keptType(resp.Header.Get("Content-Type"))
	key := base + extensionOf(contentType)
	body := &bounded.Reader{R: &countingReader{r: resp.Body, n: progress}, Left: k.MaxSize, TooLarge: errKeepTooLarge}
	n, err := k.Bucket.PutStream(ctx, key, contentType, body)
	if err != nil {
		return "", err
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return "", fmt.Errorf("the source announced %d bytes and sent %d", resp.ContentLength, n)
	}
	return key, nil
}

// keptType is the Content-Type a kept object is stored with: the source's media type when it is
// one of the usual result types (extensionOf), else application/octet-stream. The bucket, or the
// CDN before it, serves the object under the operator's origin: a source answering text/html (a
// provider's error page sent with 200) or an SVG must not become a page or a script there.
func keptType(sourceType string) string {
	if mediaType := resultMediaType(sourceType); extensionOf(mediaType) != "" {
		return mediaType
	}
	return "application/octet-stream"
}

// resultMediaType is a Content-Type's media type, lowercase, without parameters.
func resultMediaType(contentType string) string {
	mediaType, _, _ := strings.Cut(strings.ToLower(contentType), ";")
	return strings.TrimSpace(mediaType)
}

// extensionOf is the file extension of the usual result types, or none.
func extensionOf(contentType string) string {
	switch resultMediaType(contentType) {
	case "video/mp4":
		return ".mp4"
	case "video/webm":
		return ".webm"
	case "video/quicktime":
		return ".mov"
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/webp":
		return ".webp"
	}
	return ""
}

// countingReader adds the bytes read to n: the copy's progress, which the lease renewal checks.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
