// Package imageedit serves POST /v1/images/edits (spec §2.6–2.7) and the owner-only query of
// asynchronous image tasks, GET /v1/images/tasks/{id}. Edits are validated, checked against the
// key's models, and sent to the provider that serves the model (to Ark's Seedream image
// generation for a provider whose protocol is written out as ark: seedream.go). A synchronous
// answer (data[].url) passes through; when the provider answers with a task id (id or task_id), the calling account
// is recorded as its owner before the answer is returned.
package imageedit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/handlers/passthrough"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/storage"
)

// Provider endpoints, relative to the provider's base URL.
const (
	EditsPath = "images/edits"
	TasksPath = "images/tasks"
)

// DefaultMaxBodyBytes bounds an edit request body.
const DefaultMaxBodyBytes = 1 << 20

// DefaultMaxAnswer bounds the provider's answer to an edit or an image task query: 64 MiB, room
// for ten large images given back as base64 (a gpt-image 1536x1024 high quality PNG is about
// 3–4 MB, a third more in base64).
const DefaultMaxAnswer = 64 << 20

// Handler serves image edits and image task queries.
type Handler struct {
	Catalog *providers.Catalog
	Store   storage.Store
	Client  *http.Client
	// MaxAnswer bounds, in bytes, how much of the provider's answer to an edit or an image task
	// query is read; the answer is held in memory while it is checked and passed on. An edit
	// answered with success past it (the images were made) is a 502 to the client, charged its
	// estimate. Default: DefaultMaxAnswer.
	MaxAnswer int64
	// Retention is how long image task records are kept.
	Retention time.Duration
	// Accounting holds the estimate of each edit (n images at the size's price) against the
	// account's balance and the key's budget, and settles it from the answer, or, for an edit
	// answered with an image task id, from the answer of the query that shows the task's end
	// (see task_end.go); nil holds nothing.
	Accounting *accounting.Accountant
	// Idempotency honours Idempotency-Key on edits; nil ignores the header.
	Idempotency *idempotency.Guard
	Logger      *zap.Logger
	// Now is the clock that dates image task records and their expiry. Default: time.Now.
	Now func() time.Time

	// Budget bounds the bytes of provider answers held at once, gateway-wide (see
	// upstream.AnswerBudget), each account's answers within its share; nil bounds nothing. An
	// edit reserves EditAnswerReserve of it (at most MaxAnswer) for its account before anything
	// is held or sent.
	Budget *upstream.AnswerBudget

	slotsOnce sync.Once
	slots     *passthrough.Router // the active-task slots of image tasks (slots.go)
}

// now reads the handler's clock.
func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// multipartHint is what a multipart edit is told: images are public URLs, and local files are
// uploaded first.
const multipartHint = "file bodies are not accepted: give each image as a public URL in images[].image_url, uploading local files first with POST /v1/upload/presign"

var (
	// errAnswerNotHeld is an edit the provider answered with success (it made the images)
	// whose answer did not fit its account's share of the answer budget (see Budget): charged
	// its estimate, as an answer past max_answer is.
	errAnswerNotHeld = apierror.New(http.StatusBadGateway, "invalid_response",
		"the provider made the images, but their answer did not fit this account's share of the gateway's answer memory (answer_memory_per_account), held by its other answers or smaller than the answer; the edit is charged its estimate")
	errNotFound = apierror.New(http.StatusNotFound, "not_found", "no such image endpoint")
	errNoTask   = apierror.New(http.StatusNotFound, "task_not_found", "the image task does not exist or does not belong to this account")
)

// Serves reports whether path is one of the handler's, spelled exactly so: /v1/images/edits, or
// a path below /v1/images/tasks/ (answered 404 not_found unless it is /v1/images/tasks/{id}).
// Every other path, /v1/images/edits/ and /V1/IMAGES/EDITS included, is for the handler after it.
func Serves(path string) bool {
	return path == "/v1/"+EditsPath || strings.HasPrefix(path, "/v1/"+TasksPath+"/")
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := auth.FromContext(r.Context())
	var err error
	switch {
	case !ok:
		err = auth.ErrMissingKey
	case strings.HasSuffix(r.URL.Path, "/images/edits"):
		if r.Method != http.MethodPost {
			err = apierror.MethodNotAllowed(w, http.MethodPost)
			break
		}
		if h.Idempotency != nil {
			gate := idempotency.ModelGate(id.ModelFilter(), idempotency.JSONModel, func(w http.ResponseWriter, model string) {
				_, err := h.Catalog.Serving(model, id.AllowsModel)
				apierror.Respond(w, apierror.OpenAIShape, h.Logger, err)
			})
			h.Idempotency.ServeFor(w, r, id.Account+"/image-edits", apierror.OpenAIShape, DefaultMaxBodyBytes, gate, func(w http.ResponseWriter, r *http.Request) {
				if err := h.edit(w, r, id); err != nil {
					apierror.Respond(w, apierror.OpenAIShape, h.Logger, err)
				}
			})
			return
		}
		err = h.edit(w, r, id)
	case strings.Contains(r.URL.Path, "/images/tasks/"):
		_, taskID, _ := strings.Cut(r.URL.Path, "/images/tasks/")
		if taskID == "" || strings.Contains(taskID, "/") {
			// An empty segment (/images/tasks/, /images/tasks/{id}/, a doubled slash) is no
			// endpoint, as on the other endpoints: not an unknown task.
			err = errNotFound
			break
		}
		if r.Method != http.MethodGet {
			err = apierror.MethodNotAllowed(w, http.MethodGet)
			break
		}
		err = h.query(w, r, id, taskID)
	default:
		err = errNotFound
	}
	if err != nil {
		apierror.Respond(w, apierror.OpenAIShape, h.Logger, err)
	}
}

func (h *Handler) edit(w http.ResponseWriter, r *http.Request, id auth.Identity) error {
	if !apierror.IsJSON(r) {
		return apierror.WrongContentType(r, "invalid_request_body", "application/json", multipartHint)
	}
	body, err := apierror.ReadBody(w, r, DefaultMaxBodyBytes, "invalid_request_body")
	if err != nil {
		return err
	}
	model, body, err := ParseEdit(body)
	if err != nil {
		return err
	}
	p, err := h.Catalog.Serving(model, id.AllowsModel)
	if err != nil {
		return err
	}
	usage.From(r.Context()).Routed(model, p.Name, p.Name)
	var generation []byte // what an Ark provider is sent: a Seedream image generation
	if p.Protocol == adaptor.Ark {
		// Seedream's own fields (seed, watermark) are checked before anything is held.
		if generation, err = toSeedream(body, p.UpstreamModel(model)); err != nil {
			return err
		}
	}
	// Room for the answer is reserved before anything is held or sent: a gateway holding all
	// the answers it may refuses the edit uncharged (see EditAnswerReserve).
	room, ok := h.Budget.ReserveWaiting(id.Account, min(h.MaxAnswerBytes(), EditAnswerReserve), EditRoomWait)
	if !ok {
		return upstream.ErrBusy
	}
	defer room.Release() // after the answer is passed on
	slot, err := h.takeSlot(r.Context(), id, model)
	if err != nil {
		return err
	}
	kept := false // the slot, by an image task's record
	defer func() {
		if !kept {
			slot.Release()
		}
	}()
	hold, err := h.hold(r.Context(), id, model, body, slot)
	if err != nil {
		return err
	}
	defer func() {
		// However the hold ends below: when the edit outlived its deadline, the reconciler
		// released the hold and gave the slot back with it, which the Release above must not
		// do a second time. (Deferred calls run last first: this one before that Release.)
		if hold.Reconciled() {
			slot.GivenBack()
		}
	}()
	usage.From(r.Context()).Accepted()
	idempotency.MarkForwarded(r.Context())
	// The client going away must not orphan an image task: the upstream call (bounded by the
	// client's Timeout, upstream_timeout) and the ownership record run to completion.
	ctx := context.WithoutCancel(r.Context())
	ans, up, err := h.create(ctx, id.Account, p, model, body, generation, room)
	if errors.Is(err, upstream.ErrTooLarge) || errors.Is(err, upstream.ErrPastShareAnswered) || errors.Is(err, upstream.ErrBusyAnswered) {
		// The provider answered the edit with success, past what the gateway reads, or past
		// the room in the answer budget: it made the images (or the task), and bills them.
		return h.unreadAnswer(r, id, model, hold, err)
	}
	if upstream.Sent(err) {
		// Written to the provider, then failed (a timeout, a reset): the provider may have made
		// the images and bill them, as a pass-through request written and then failed is
		// charged. Charged its estimate; its Idempotency-Key is spent without an answer to
		// keep (a retry gets 409 idempotency_answer_not_kept, never a second edit).
		usage.From(r.Context()).Settled(int64(hold.Settle(billing.Usage{})))
		idempotency.MarkMade(r.Context())
		idempotency.MarkCut(r.Context())
		h.Logger.Warn("image edit sent to the upstream and not answered: charged its estimate",
			zap.String("model", model), zap.String("account", id.Account), zap.String("key_id", id.KeyID), zap.Error(err))
		return err
	}
	if err != nil {
		// Never written to a provider's connection (refused, or a dial that timed out): nothing
		// was made.
		hold.Release("not answered by the upstream")
		return err
	}
	if !ans.OK() {
		hold.Release("refused by the upstream")
		return upstream.Refusal(ans)
	}
	// The answer is the gateway's, as a video task's: it never quotes the operator's key. (Its
	// copy takes the answer's place in the answer budget: see Budget.)
	if !ans.Replace(upstream.WithoutCredentials(up, ans.Body)) {
		return h.unreadAnswer(r, id, model, hold, ans.BusyError())
	}
	if streamedAnswer(ans) {
		settleStream(r.Context(), hold, ans.Body)
		passOn(w, ans)
		return nil
	}
	taskID, images, ok := readAnswer(ans.Body)
	if strings.Contains(taskID, upstream.Redacted) {
		ok = false // an id that quoted the operator's key (see WithoutCredentials): not one to hand out
	}
	if !ok && taskID != "" {
		// The task may run upstream: it is not made free (its hold is charged as estimated,
		// and the request's record says so).
		usage.From(r.Context()).Settled(int64(hold.Settle(billing.Usage{})))
		idempotency.MarkMade(r.Context())
		h.Logger.Error("image task created upstream with an id that cannot be used: the upstream task cannot be followed; its cost stays charged",
			zap.String("upstream", up.Label()), zap.String("account", id.Account), zap.String("key_id", id.KeyID))
		return upstream.ErrUnreadable
	}
	if !ok {
		hold.Release("unreadable answer from the upstream")
		return upstream.ErrUnreadable
	}
	switch {
	case images > 0:
		// Images made: charged for the number of items in data (at most the n asked for), at
		// the size and quality the answer reports (gpt-image's), else the request's.
		size, quality := reportedImage(ans.Body)
		usage.From(r.Context()).Settled(int64(hold.Settle(billing.Usage{Images: atMostAsked(hold, images), ImageSize: size, ImageQuality: quality})))
	case taskID != "":
		// An image task: its images come later, through the owner's queries. Its record
		// carries the hold, and the query that shows the task's end settles or releases it
		// (see recordTask).
		if kept, err = h.recordTask(ctx, r, id, p, up, model, taskID, ans.Body, slot, hold); err != nil {
			return err
		}
		passOn(w, ans)
		return nil
	default:
		// No image and no task: the upstream reported a failure (error) or made nothing.
		hold.Release("the upstream made no image")
	}
	passOn(w, ans)
	return nil
}

// unreadAnswer ends an edit that the provider answered with success (it made the images, or the
// task, and bills them) but whose answer the gateway could not read or hold (err). Past
// max_answer, or past the account's share of the answer budget (ErrPastShareAnswered: the
// account's own answers, or an answer bigger than the share, left it no room), it is charged
// its estimate, kept as made for its Idempotency-Key, and answered 502. Within the account's
// share, with the budget full of other accounts' answers (ErrBusyAnswered), the loss is the
// gateway's: the hold is released, nothing is charged, and the edit is 503 gateway_busy (a
// retry with its Idempotency-Key runs again).
func (h *Handler) unreadAnswer(r *http.Request, id auth.Identity, model string, hold accounting.Hold, err error) error {
	if errors.Is(err, upstream.ErrBusyAnswered) {
		hold.Release("the gateway had no room to hold the answer")
		idempotency.MarkUnmade(r.Context())
		h.Logger.Error("image edit answered with success but the gateway, full of other accounts' answers, could not hold its answer (answer_memory): not charged",
			zap.String("model", model), zap.String("account", id.Account), zap.String("key_id", id.KeyID))
		return upstream.ErrBusyAnswered
	}
	usage.From(r.Context()).Settled(int64(hold.Settle(billing.Usage{})))
	idempotency.MarkMade(r.Context())
	h.Logger.Error("image edit answered with success but its answer was not read (past max_answer, or past the account's share of answer_memory): charged its estimate",
		zap.String("model", model), zap.String("account", id.Account), zap.String("key_id", id.KeyID), zap.Error(err))
	if errors.Is(err, upstream.ErrPastShareAnswered) {
		return errAnswerNotHeld // not "retry shortly": a retry is a new edit, charged again
	}
	return err
}

// readAnswer reads a successful answer (spec §2.7): images (data), or a task whose id is
// task_id or id, or a failure reported in error. It returns the task id of an asynchronous
// answer, the number of items in data, and ok false for an answer that is none of these (not a
// JSON object, or a task id that is not upstream.UsableID), which the client could not use;
// with an unusable id, that id (the upstream accepted a task that cannot be followed).
func readAnswer(body []byte) (taskID string, images int64, ok bool) {
	var a struct {
		ID     any               `json:"id"`
		TaskID any               `json:"task_id"`
		Data   []json.RawMessage `json:"data"`
		Error  json.RawMessage   `json:"error"`
	}
	if json.Unmarshal(body, &a) != nil || bytes.TrimSpace(body)[0] != '{' {
		return "", 0, false
	}
	if len(a.Data) > 0 {
		return "", int64(len(a.Data)), true
	}
	for _, id := range []any{a.TaskID, a.ID} {
		if s, isString := id.(string); isString && s != "" {
			return s, 0, upstream.UsableID(s)
		}
	}
	return "", 0, a.Data != nil || (len(a.Error) > 0 && string(a.Error) != "null")
}

// reportedImage is the size and quality a successful answer reports at its top level, as
// OpenAI's gpt-image answers do, when a price can name them (billing.AnswerImage); else "".
func reportedImage(body []byte) (size, quality string) {
	var a struct {
		Size    any `json:"size"`
		Quality any `json:"quality"`
	}
	if json.Unmarshal(body, &a) != nil {
		return "", ""
	}
	size, _ = a.Size.(string)
	quality, _ = a.Quality.(string)
	return billing.AnswerImage(size, quality)
}

// query answers GET /v1/images/tasks/{id} for the owning account only. The owner's
// concurrent queries of a task share one provider call, whichever config serves them (see
// query_flight.go).
func (h *Handler) query(w http.ResponseWriter, r *http.Request, id auth.Identity, taskID string) error {
	t, err := h.Store.Task(r.Context(), taskID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && (!id.Sees(t.Account, t.Model) || t.Kind != storage.KindImage)) {
		return errNoTask
	}
	if err != nil {
		return err
	}
	p, ok := h.boundUpstream(t)
	if !ok {
		return apierror.New(http.StatusConflict, "provider_unavailable", "the upstream of this task is no longer configured")
	}
	key := queryKey(h.Store, taskID)
	q := taskQueries.join(r.Context(), key, func(ctx context.Context) (upstream.Answer, error) {
		return h.queryUpstream(ctx, t, p)
	})
	defer taskQueries.leave(key, q)
	select {
	case <-q.done:
	case <-r.Context().Done():
		return errClientLeft
	}
	usage.From(r.Context()).AddUpstream(q.latency, q.tokens)
	if q.err != nil {
		return q.err
	}
	passOn(w, q.ans)
	return nil
}

// errClientLeft ends a query whose client left before the answer came (as reverse_proxy logs
// such a request: 499); the client reads nothing.
var errClientLeft = apierror.New(499, "client_closed_request", "the client closed the request before the answer came")

// queryUpstream reads the image task t from its upstream p and returns the answer as its owner
// gets it: the provider's credential taken out, the client's model id shown. When the answer
// shows the task final, the task is ended (finishedByAnswer). The answer's Body is never
// changed in place: every transformation makes a new one. On an error (or a panic), the answer's bytes
// are given back at once.
func (h *Handler) queryUpstream(ctx context.Context, t storage.Task, p *providers.Upstream) (upstream.Answer, error) {
	ans, err := h.clientFor(t.Account).Call(ctx, p, http.MethodGet, TasksPath+"/"+url.PathEscape(t.ID), nil)
	if errors.Is(err, upstream.ErrPastShareAnswered) {
		return upstream.Answer{}, upstream.ErrBusy // a query is free: retried, never charged
	}
	if err != nil {
		return upstream.Answer{}, err
	}
	passed := false
	defer func() {
		if !passed {
			ans.Release() // an error, or a panic on the way
		}
	}()
	if err := queryRefused(ans); err != nil {
		return upstream.Answer{}, err
	}
	// Each copy of the answer below, made only when the answer needs it, takes the answer's
	// place in the budget (upstream.Answer.Replace): the original is no longer used.
	if !ans.Replace(upstream.WithoutCredentials(p, ans.Body)) {
		return upstream.Answer{}, upstream.ErrBusy
	}
	if t.Active && !t.Finished {
		h.finishedByAnswer(ctx, t.ID, ans.Body)
	}
	// The answer shows the client's model id, as the create's did (see create): never the
	// upstream's id of an aliased model (model_map).
	if prov, ok := h.Catalog.Provider(t.Provider); ok && prov.UpstreamModel(t.Model) != t.Model {
		if shown, ok := providers.ReplaceModel(ans.Body, t.Model); ok && !ans.Replace(shown) {
			return upstream.Answer{}, upstream.ErrBusy
		}
	}
	passed = true
	return ans, nil
}

// queryRefused is the error of a task query's answer that is not a task to pass on.
func queryRefused(ans upstream.Answer) error {
	switch {
	case ans.Status == http.StatusNotFound:
		return errNoTask
	case !ans.OK():
		return upstream.Refusal(ans)
	case !jsonObject(ans.Body):
		return upstream.ErrUnreadable // not a task's answer: never passed on as the provider typed it
	}
	return nil
}

// passOn writes a provider's successful answer, read whole, as the gateway's own: an event
// stream (streamedAnswer) as text/event-stream, any other answer (a JSON object, as readAnswer
// and query have checked) as application/json, with nosniff. The provider's Content-Type is
// never passed on: a hostile provider's text/html or SVG must not become a page or a script on
// the gateway's origin.
func passOn(w http.ResponseWriter, ans upstream.Answer) {
	ct := "application/json"
	if streamedAnswer(ans) {
		ct = "text/event-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(ans.Status)
	_ = writeAnswer(w, ans.Body) // a client gone or too slow gets no more (see answer_write.go)
}

// jsonObject reports whether body is one JSON object.
func jsonObject(body []byte) bool {
	trimmed := bytes.TrimSpace(body)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}

// EditAnswerReserve is the part of the answer budget an edit reserves before it is charged and
// sent (at most MaxAnswer), and holds while the provider works on it: 64 KiB, the first buffer
// an answer is read into, which holds an answer of URLs or a task id whole. A gateway without
// that much room, or an account whose answers hold its share, refuses the edit uncharged (503
// gateway_busy); an answer that outgrows it takes more as it is read, waiting up to
// EditRoomWait for room when there is none.
const EditAnswerReserve = 64 << 10

// EditRoomWait is how long an edit's successful answer may wait, in all, for room in the answer
// budget before it is given up (see unreadAnswer: 502 charged when its own account's answers took
// the room, 503 uncharged when other accounts' did). It is longer than a client that stopped
// reading may hold an answer (one part's bound, see answer_write.go), so room held so comes back
// within it. A slow client within its account's share may hold that share for minutes: only
// answers of more accounts than the budget has shares for can keep an edit out for 15 s.
const EditRoomWait = 15 * time.Second

// MaxAnswerBytes is MaxAnswer, or its default.
func (h *Handler) MaxAnswerBytes() int64 {
	if h.MaxAnswer <= 0 {
		return DefaultMaxAnswer
	}
	return h.MaxAnswer
}

func (h *Handler) client() upstream.Client {
	return upstream.Client{HTTP: h.Client, Logger: h.Logger, MaxAnswer: h.MaxAnswerBytes(), Budget: h.Budget}
}

// clientFor is the handler's client for calls that read account's answers.
func (h *Handler) clientFor(account string) upstream.Client {
	c := h.client()
	c.Account = account
	return c
}

func (h *Handler) retention() time.Duration {
	if h.Retention > 0 {
		return h.Retention
	}
	return storage.DefaultTaskRetention
}
