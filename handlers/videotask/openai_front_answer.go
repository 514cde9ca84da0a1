package videotask

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// Video is the video object of the OpenAI-style API, made from a task's record.
type Video struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Model  string `json:"model"`
	// Status is queued, in_progress, completed or failed (a cancelled or expired task is failed,
	// with an error that says which).
	Status string `json:"status"`
	// Progress is the provider's percentage when it reports one; otherwise 0 while queued, 50 in
	// progress, 100 once finished.
	Progress    int64       `json:"progress"`
	CreatedAt   int64       `json:"created_at"`
	CompletedAt *int64      `json:"completed_at"`
	ExpiresAt   *int64      `json:"expires_at"`
	Error       *VideoError `json:"error"`
	// Prompt is the prompt of a video created through this front; null for a task created
	// through the task API.
	Prompt             *string `json:"prompt"`
	RemixedFromVideoID *string `json:"remixed_from_video_id"`
	// Seconds is the actual duration when the provider reported it, else the length the
	// provider was asked for (which can differ from the request's: Sora makes 4, 8 or 12 s, and
	// is asked for 4 where 5 is requested), else the one requested, else the contract's default
	// (5).
	Seconds string `json:"seconds"`
	// Size is the width x height of the actual resolution and ratio when reported, else of the
	// resolution the provider was asked for (which can differ from the request's: Wan 2.2 Plus
	// makes 480p or 1080p, and is asked for 1080p where 720p is requested) and the ratio asked
	// for, else of 720p 16:9.
	Size string `json:"size"`
}

// VideoError says why a video failed.
type VideoError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// videoStatuses maps the task states (spec §3.1) onto the video states.
var videoStatuses = map[string]string{
	StatusQueued: "queued", StatusRunning: "in_progress", StatusSucceeded: "completed",
	StatusFailed: "failed", StatusCancelled: "failed", StatusExpired: "failed",
}

// frontAnswer is the task API's answer about t as a client sees it (spec §2.5), from which this
// front makes its own: the stored answer, or one made of the record. It is the one place where
// this front reads a task's answer, so that what the task API answers (a kept result's address,
// for one) holds here too.
func (h *Handler) frontAnswer(ctx context.Context, t storage.Task) json.RawMessage {
	return h.clientAnswer(ctx, t)
}

// frontVideo is the video object of t: made of its answer (frontAnswer) and of the video its
// provider was asked for.
func (h *Handler) frontVideo(ctx context.Context, t storage.Task) Video {
	asked, _ := canonicalRequest(t) // a record without a readable request shows the defaults
	return videoObject(t, h.frontAnswer(ctx, t), asked, h.plannedVideo(t, asked))
}

// plannedVideo is the length and resolution a task's provider was asked for, where its adaptor
// plans them (adaptor.Planner: Sora's 4 s for the contract's 5, Wan 2.2's 1080p for 720p); a
// zero field where they are the request's own.
func (h *Handler) plannedVideo(t storage.Task, asked adaptor.Request) billing.PlannedVideo {
	a, ok := h.taskAdaptor(t)
	if !ok {
		return billing.PlannedVideo{}
	}
	if planner, ok := a.(adaptor.Planner); ok {
		return planner.Plan(asked)
	}
	return billing.PlannedVideo{}
}

// videoObject is the video object of a task record, its answer and its canonical request;
// planned is the video its provider was asked for (a zero field: the request's). The status is
// the answer's, as the task API shows it.
func videoObject(t storage.Task, raw json.RawMessage, asked adaptor.Request, planned billing.PlannedVideo) Video {
	answer := map[string]json.RawMessage{}
	if json.Unmarshal(raw, &answer) != nil {
		answer = map[string]json.RawMessage{}
	}
	status := t.Status
	if s, ok := answer["status"]; ok {
		status = answerStatus(s)
	}
	if status == "" {
		status = StatusQueued
	}
	v := Video{ID: t.ID, Object: "video", Model: t.Model, Status: videoStatuses[status], CreatedAt: t.CreatedAt}
	if v.Status == "" {
		v.Status = "in_progress" // a status this front does not know yet is not an end
	}
	if asked.Prompt != "" {
		v.Prompt = &asked.Prompt
	}
	v.Progress = map[string]int64{"queued": 0, "in_progress": 50}[v.Status]
	if n, ok := integer(answer["progress"]); ok && n >= 0 && n <= 100 {
		v.Progress = n
	}
	if storage.Terminal(status) {
		done := t.UpdatedAt
		if n, ok := integer(answer["updated_at"]); ok {
			done = n
		}
		v.CompletedAt, v.Progress = &done, 100
	}
	v.Error = videoError(status, answer["error"])

	seconds := asked.Duration
	if planned.Seconds > 0 {
		seconds = planned.Seconds
	}
	if n, ok := integer(answer["duration"]); ok && n > 0 {
		seconds = n
	}
	if seconds <= 0 {
		seconds = 5
	}
	v.Seconds = strconv.FormatInt(seconds, 10)
	resolution, ratio := asked.Resolution, asked.Ratio
	if planned.Resolution != "" {
		resolution = planned.Resolution
	}
	if s := unquoted(answer["resolution"]); s != "" {
		resolution = s
	}
	if s := unquoted(answer["ratio"]); s != "" {
		ratio = s
	}
	v.Size = ArkToSize(resolution, ratio)
	return v
}

// videoError is the error of a video that did not complete: the provider's for a failed task,
// one that says so for a cancelled or expired one; nil otherwise.
func videoError(status string, raw json.RawMessage) *VideoError {
	switch status {
	case StatusCancelled:
		return &VideoError{Code: "cancelled", Message: "the video was cancelled before it was generated"}
	case StatusExpired:
		return &VideoError{Code: "expired", Message: "the video was not generated within its execution time"}
	case StatusFailed:
		var e struct{ Code, Message string }
		if json.Unmarshal(raw, &e) != nil || e.Message == "" {
			e.Message = "the video generation failed"
		}
		if e.Code == "" {
			e.Code = "video_generation_failed"
		}
		return &VideoError{Code: e.Code, Message: e.Message}
	}
	return nil
}

// retrieve answers GET /v1/videos/{id}: the task as the task API's query reads it.
func (f *VideosFront) retrieve(w http.ResponseWriter, r *http.Request, id auth.Identity, videoID string) error {
	t, err := f.Tasks.owned(r.Context(), id, videoID)
	if err != nil {
		return err
	}
	if t, err = f.Tasks.current(t); err != nil {
		return err
	}
	writeJSON(w, f.Tasks.frontVideo(r.Context(), t))
	return nil
}

// VideoDeleted answers a delete.
type VideoDeleted struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	// Deleted is true when the video's record is gone: a finished video is deleted; a queued
	// one is cancelled (and shown failed, with the error code cancelled) until it is deleted
	// in turn.
	Deleted bool `json:"deleted"`
}

// delete answers DELETE /v1/videos/{id} as the task API's cancel does its work: a finished
// task is deleted, a queued one cancelled, a running one's refusal passed on.
func (f *VideosFront) delete(w http.ResponseWriter, r *http.Request, id auth.Identity, videoID string) error {
	if err := f.Tasks.cancelTask(r.Context(), id, videoID); err != nil {
		return err
	}
	_, err := f.Tasks.Store.Task(r.Context(), videoID)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	writeJSON(w, VideoDeleted{ID: videoID, Object: "video.deleted", Deleted: err != nil})
	return nil
}

// VideoList is a page of the caller's videos.
type VideoList struct {
	Object  string  `json:"object"`
	Data    []Video `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// Page sizes of a video list.
const (
	DefaultVideoListLimit = 20
	MaxVideoListLimit     = 100
)

// list answers GET /v1/videos: the caller's video tasks (whichever front created them), newest
// first or, with order=asc, oldest first; after is the id of the last video of the previous
// page. The answers are the stored ones: nothing is read from a provider. A page reads the
// account's tasks from the cursor until it has limit+1 videos (the one past the page says
// has_more), never the whole account: there is no total to count.
func (f *VideosFront) list(w http.ResponseWriter, r *http.Request, id auth.Identity) error {
	v, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return apierror.New(http.StatusBadRequest, "invalid_request", "the query string is malformed")
	}
	for name := range v {
		if name != "after" && name != "limit" && name != "order" {
			return frontInvalid(name, "is not a parameter of this endpoint (accepted: after, limit, order)")
		}
		if len(v[name]) > 1 {
			return frontInvalid(name, "is given more than once")
		}
	}
	limit := DefaultVideoListLimit
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxVideoListLimit {
			return frontInvalid("limit", "must be an integer from 1 to %d", MaxVideoListLimit)
		}
		limit = n
	}
	order := v.Get("order")
	if order != "" && order != "asc" && order != "desc" {
		return frontInvalid("order", "must be asc or desc")
	}
	page, err := f.Tasks.Store.ListTasks(r.Context(), id.Account, storage.TaskQuery{
		Kind: storage.KindVideo, PageNum: 1, PageSize: limit + 1, Oldest: order == "asc", After: v.Get("after"), NoTotal: true,
		ModelAllowed: id.ModelFilter(),
	})
	if err != nil {
		return err
	}
	out := VideoList{Object: "list", Data: make([]Video, 0, min(len(page.Tasks), limit))}
	for i, t := range page.Tasks {
		if i == limit {
			out.HasMore = true
			break
		}
		out.Data = append(out.Data, f.Tasks.frontVideo(r.Context(), t))
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = &out.Data[0].ID, &out.Data[n-1].ID
	}
	writeJSON(w, out)
	return nil
}
