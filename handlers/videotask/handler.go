// Package videotask serves the asynchronous video generation task API of spec §2.2–2.5: create,
// query, list and cancel, in the BytePlus/Volcengine Ark protocol. The upstream provider is chosen
// by model; each task's owning account is recorded in the store, and only that account can see
// the task.
package videotask

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/handlers/idempotency"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/handlers/videotask/adaptor"
	"github.com/mediagw/mediagw/internal/metrics"
	"github.com/mediagw/mediagw/storage"
)

// TasksPath is the collection path, relative to a provider's base URL and at the end of the
// gateway's own path (/api/v3/contents/generations/tasks).
const TasksPath = "contents/generations/tasks"

// Defaults of the Handler's settings.
const (
	DefaultRefreshInterval = time.Second
	DefaultMaxBodyBytes    = 1 << 20
	DefaultUpstreamTimeout = 60 * time.Second
)

// Handler serves the task API. Fill the exported fields, then serve.
type Handler struct {
	Catalog *providers.Catalog
	Store   storage.Store
	// Client calls the providers; its Timeout bounds each upstream call.
	Client *http.Client
	// Retention is how long task records are kept after the task finished (see
	// storage.Task.Expiry).
	Retention time.Duration
	// RefreshInterval is the least time between two upstream reads of one unfinished task.
	RefreshInterval time.Duration
	// MaxBodyBytes bounds a create request body; past it the answer is 413.
	MaxBodyBytes int64
	// Accounting applies quotas and active-task limits; nil applies none.
	Accounting *accounting.Accountant
	// Idempotency honours Idempotency-Key on create; nil ignores the header.
	Idempotency *idempotency.Guard
	// Callbacks delivers status changes to callback_url; nil delivers none.
	Callbacks *callbacks.Outbox
	// Watcher polls unfinished tasks; nil leaves them to client polls.
	Watcher *Watcher
	// Keep copies succeeded tasks' results into the operator's bucket (keep_results); nil
	// answers the provider's result URLs.
	Keep *Keeper
	// RelayBase, when set, is this gateway's public base URL: each task is created upstream with
	// a callback to RelayBase/mediagw/callbacks/<token>, which ServeRelay treats as a hint to
	// refresh the task. The client's own callback_url never reaches the upstream.
	RelayBase string
	Logger    *zap.Logger
	// Now is the clock of the handler and its Watcher: task dates, refresh intervals, overdue
	// tasks, shard leases and the watch schedule. Default: time.Now.
	Now func() time.Time

	unbatched unbatched // upstreams whose task list cannot filter by id (batch.go)
}

// refreshes lets concurrent reads of one task share one upstream request, across every Handler
// of the process (client polls and the watcher, and the old and new config during a reload).
var refreshes singleflight.Group

// refreshOnce refreshes t, sharing the upstream request with any concurrent refresh of it. ctx
// bounds the refresh when this call leads it; a client's own request context is not passed here,
// since other clients may be waiting for the same refresh.
func (h *Handler) refreshOnce(ctx context.Context, t storage.Task) (storage.Task, error) {
	return h.readOnce(ctx, t, false, nil)
}

// readOnce is readUpstream, shared as refreshOnce shares a refresh: whoever leads the read
// decides whether an unchanged answer is written.
func (h *Handler) readOnce(ctx context.Context, t storage.Task, onlyChanges bool, seen *answerMemo) (storage.Task, error) {
	v, err, _ := refreshes.Do(fmt.Sprintf("%p/%s", h.Store, t.ID), func() (any, error) { return h.readUpstream(ctx, t, onlyChanges, seen) })
	return v.(storage.Task), err
}

var (
	errNotFound     = apierror.New(http.StatusNotFound, "not_found", "no such endpoint of the video task API")
	errTaskNotExist = apierror.New(http.StatusBadRequest, "task_not_exist", "the task does not exist or does not belong to this account")
)

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, ok := auth.FromContext(r.Context())
	if !ok {
		apierror.Write(w, apierror.TaskShape, auth.ErrMissingKey)
		return
	}
	// The paths are exactly the collection, /{id} and /{id}/content: an empty segment (a
	// trailing or doubled slash, /tasks/ included) is no endpoint, as on pass-through paths.
	_, rest, found := strings.Cut(r.URL.Path, "/"+TasksPath)
	taskID, isItem := strings.CutPrefix(rest, "/")
	if !found || rest != "" && !isItem || isItem && (taskID == "" || strings.HasPrefix(taskID, "/") || strings.HasSuffix(taskID, "/")) {
		apierror.Write(w, apierror.TaskShape, errNotFound)
		return
	}
	if contentOf, ok := strings.CutSuffix(taskID, "/"+contentPath); ok && contentOf != "" && !strings.Contains(contentOf, "/") {
		if r.Method != http.MethodGet {
			apierror.Respond(w, apierror.TaskShape, h.Logger, apierror.MethodNotAllowed(w, http.MethodGet))
			return
		}
		if err := h.content(w, r, id, contentOf); err != nil {
			apierror.Respond(w, apierror.TaskShape, h.Logger, err)
		}
		return
	}
	if strings.Contains(taskID, "/") {
		apierror.Write(w, apierror.TaskShape, errNotFound)
		return
	}
	var err error
	switch {
	case taskID == "" && r.Method == http.MethodPost && h.Idempotency != nil && idempotency.Requested(r):
		// Only a create that asks for it goes through the guard: a plain one builds no scope
		// and no closure.
		h.Idempotency.ServeFor(w, r, id.Account+"/video-tasks", apierror.TaskShape, h.maxBody(), h.modelGate(id, idempotency.JSONModel, func(w http.ResponseWriter, err error) {
			apierror.Respond(w, apierror.TaskShape, h.Logger, err)
		}), func(w http.ResponseWriter, r *http.Request) {
			if err := h.create(w, r, id); err != nil {
				apierror.Respond(w, apierror.TaskShape, h.Logger, err)
			}
		})
	case taskID == "" && r.Method == http.MethodPost:
		err = h.create(w, r, id)
	case taskID == "" && r.Method == http.MethodGet:
		err = h.list(w, r, id)
	case taskID != "" && r.Method == http.MethodGet:
		err = h.query(w, r, id, taskID)
	case taskID != "" && r.Method == http.MethodDelete:
		err = h.cancel(w, r, id, taskID)
	default:
		if taskID == "" {
			err = apierror.MethodNotAllowed(w, http.MethodGet, http.MethodPost)
		} else {
			err = apierror.MethodNotAllowed(w, http.MethodGet, http.MethodDelete)
		}
	}
	if err != nil {
		apierror.Respond(w, apierror.TaskShape, h.Logger, err)
	}
}

// create validates, picks the provider, creates the upstream task, records ownership and only
// then answers with the id.
func (h *Handler) create(w http.ResponseWriter, r *http.Request, id auth.Identity) error {
	if !apierror.IsJSON(r) {
		return apierror.WrongContentType(r, "invalid_request", "application/json", "")
	}
	body, err := apierror.ReadBody(w, r, h.maxBody(), "invalid_request")
	if err != nil {
		return err
	}
	req, err := ParseCreate(body)
	if err != nil {
		return err
	}
	stored, err := h.createTask(r, id, req, false)
	if err != nil {
		return err
	}
	writeCreated(w, stored.ID)
	return nil
}

// modelGate keeps a key restricted to some models from another key's stored create answer of a
// model it may not use (idempotency.ModelGate): such a retry is refused as the create refuses the
// model, written by refuse.
func (h *Handler) modelGate(id auth.Identity, modelOf func(body []byte) string, refuse func(w http.ResponseWriter, err error)) idempotency.MayAsk {
	return idempotency.ModelGate(id.ModelFilter(), modelOf, func(w http.ResponseWriter, model string) {
		_, err := h.Catalog.Serving(model, id.AllowsModel)
		refuse(w, err)
	})
}

// maxCreateCalls bounds a create's upstream calls, failover over its provider's channels
// included, whatever upstream_timeout says (each call is bounded by it too): the create's hold
// is released by the reconciler at its deadline (storage.DefaultHoldDeadline, 10 minutes) if no
// task has bound it, and a create still calling upstream then would make a task that nothing
// charges. Past it the client gets 504, as for one call's timeout.
var maxCreateCalls = storage.DefaultHoldDeadline / 2

// createTask runs a checked create request through the one create path that every front shares:
// the callback check, the provider's choice, drafts, limits, quota and billing hold, the upstream
// create and the ownership record, and only then answers the stored record. With keepRequest the
// record keeps the canonical request (storage.Task.Request) also for an Ark task, for a front
// whose answers show what was asked (the OpenAI-style front's prompt, seconds and size).
func (h *Handler) createTask(r *http.Request, id auth.Identity, req CreateRequest, keepRequest bool) (storage.Task, error) {
	if req.CallbackURL != "" && h.Callbacks != nil {
		if err := h.Callbacks.CheckTarget(req.CallbackURL); err != nil {
			return storage.Task{}, invalid("callback_url", "%v", err)
		}
	}
	p, err := h.Catalog.Serving(req.Model, id.AllowsModel)
	if err != nil {
		return storage.Task{}, err
	}
	usage.From(r.Context()).Routed(req.Model, p.Name, p.Name)
	bound, err := h.checkDrafts(r.Context(), id, p, req.DraftTasks)
	if err != nil {
		return storage.Task{}, err
	}
	// An adaptor's request is read before the hold, which counts the video its provider makes
	// (adaptor.Planner); its record keeps it (launchAdapted's canonical request). An Ark task's
	// record keeps its canonical request only with keepRequest.
	a, adapted := adaptorOf(p)
	var adaptorReq adaptor.Request
	var kept json.RawMessage
	switch {
	case adapted:
		if adaptorReq, err = adaptor.FromArk(req.Forward, p.UpstreamModel(req.Model)); err != nil {
			return storage.Task{}, err
		}
		if planner, ok := a.(adaptor.Planner); ok {
			req.Billing.Planned = planner.Plan(adaptorReq)
		}
		// No adaptor sends draft (adaptor.Request has none): the provider makes its full video,
		// which the hold and the settlement count, never a draft's lower price.
		req.Billing.Draft = false
	case keepRequest:
		c, err := adaptor.FromArk(req.Forward, req.Model)
		if err != nil {
			return storage.Task{}, err
		}
		if kept, err = json.Marshal(c); err != nil {
			return storage.Task{}, err
		}
	}
	if made, ok, err := h.madeByKey(r.Context(), id); ok || err != nil {
		return made, err
	}
	slot, err := h.startTask(r.Context(), id, req.Model)
	if err != nil {
		return storage.Task{}, err
	}
	hold, err := h.hold(r.Context(), id, req, slot)
	if err != nil {
		slot.Release()
		usage.From(r.Context()).Refused()
		return storage.Task{}, err
	}
	claim := createClaim{ctx: r.Context(), slot: slot, hold: hold}
	// From here on the client going away must not orphan the task: the upstream create and the
	// ownership record run to completion (each upstream call bounded by the client's Timeout,
	// upstream_timeout), so a task the client never saw is still owned and listed.
	ctx := context.WithoutCancel(r.Context())
	forward, token := req.Forward, ""
	if h.RelayBase != "" && !adapted { // an adaptor's provider calls back in its own way, or not
		var relayURL string
		token, relayURL = h.relayToken()
		if forward, err = withCallback(forward, relayURL); err != nil {
			claim.free("not sent upstream")
			return storage.Task{}, err
		}
	}
	idempotency.MarkForwarded(r.Context())
	var taskID, upstreamID string
	var canonical json.RawMessage
	var up *providers.Upstream
	if adapted {
		launchCtx, cancelLaunch := context.WithTimeout(ctx, maxCreateCalls)
		taskID, upstreamID, canonical, up, err = h.launchAdapted(launchCtx, id.Account, a, p, adaptorReq)
		cancelLaunch()
	} else {
		// The bound rides on each call's own deadline (upstream.Client.Until): no timer of its own.
		taskID, up, err = h.launch(ctx, time.Now().Add(maxCreateCalls), id.Account, p, bound, req.Model, forward)
	}
	if errors.Is(err, errUnfollowable) {
		// The task may run upstream: it is not made free (its hold is charged as estimated).
		// Its slot is given back, as no record will ever release it.
		claim.charge()
		h.Logger.Error("video task created upstream with an id that cannot be used: the upstream task cannot be followed; its cost stays charged",
			zap.String("upstream", up.Label()), zap.String("account", id.Account), zap.String("key_id", id.KeyID))
		return storage.Task{}, upstream.ErrUnreadable
	}
	if err != nil {
		claim.free("refused by the upstream")
		return storage.Task{}, err
	}
	usage.From(r.Context()).Routed(req.Model, p.Name, cmp.Or(up.Name, p.Name)) // the upstream that made it
	if canonical == nil {
		canonical = kept
	}
	t := h.now()
	task := storage.Task{
		ID: taskID, Kind: storage.KindVideo, Account: id.Account, KeyID: id.KeyID,
		Provider: p.Name, Upstream: up.Name, UpstreamAddress: up.Address(), Model: req.Model, Status: StatusQueued,
		CreatedAt: t.Unix(), UpdatedAt: t.Unix(), ExpiresAt: t.Add(h.retention()).Unix(),
		CallbackURL: req.CallbackURL, Active: slot.Held,
		NoLastFrame: !req.ReturnLastFrame, UpstreamID: upstreamID, Request: canonical,
		HoldID: hold.ID, HoldAmount: int64(hold.Estimate.Amount),
		IdempotencyKey: idempotency.RecordKey(r.Context()),
	}
	if hold.ID != "" {
		task.HoldUsage, task.HoldPrice = hold.Estimate.Usage.Encode(), hold.EncodedPrice()
	}
	var stored storage.Task
	if adapted {
		stored, err = h.recordAdapted(ctx, slot, up, task) // its upstream id is unique too
	} else {
		stored, err = slot.CreateTask(ctx, h.Store, task)
	}
	if errors.Is(err, storage.ErrExists) {
		// The upstream answered with the id of a task already recorded (an Ark task's id, an
		// adapted task's upstream id at that upstream): another account's, or an earlier one of
		// this account (a caching proxy in front of the provider, a provider that folds
		// identical creates, a reused id). That task is left alone, never cancelled on this
		// request's behalf; the id is not handed out. As with an unusable id, whatever the
		// upstream started may run, so the cost stays charged (the hold as estimated); the slot
		// is given back.
		claim.charge()
		h.Logger.Error("the upstream answered a video task create with the id of a task already recorded; the create fails and that task is left alone",
			zap.String("task_id", taskID), zap.String("upstream", up.Label()), zap.String("account", id.Account), zap.String("key_id", id.KeyID))
		return storage.Task{}, upstream.ErrUnreadable
	} else if err != nil {
		// Never hand out an id whose ownership is not recorded. The task is cancelled upstream;
		// its cost is given back only when the upstream confirms, so that a task left running
		// is never both unowned and free.
		slot.Release() // now, not after the upstream cancel's round trip (Release is once)
		if adapted && h.abandonAdapted(a, up, upstreamID) || !adapted && h.abandon(up, taskID) {
			claim.free("cancelled: its record could not be written")
		} else {
			claim.charge()
		}
		return storage.Task{}, err
	}
	if h.Accounting != nil {
		// The task's finish now settles the hold; the reconciler leaves it alone. Badger's
		// create bound it already (this then lets its ledger drop the hold from memory until
		// the finish); Redis's binds it here.
		if h.Accounting.BindTask(ctx, hold.ID, taskID) {
			// The reconciler released the hold first, and gave the slot back with it.
			h.Accounting.SlotGivenBack(ctx, taskID)
			stored.Active = false
		}
	}
	if token != "" {
		h.rememberRelay(ctx, token, taskID)
	}
	if h.Accounting != nil {
		h.Accounting.TaskCreated(id)
	}
	usage.From(r.Context()).TaskCreated(taskID)
	metrics.TaskCreated(p.Name, req.Model)
	if h.Watcher != nil {
		h.Watcher.Watch(stored)
	}
	return stored, nil
}

// writeCreated answers a create: {"id":"<task id>"}, built in one buffer without encoding a
// map; the id is written as encoding/json writes it (quoted), <, > and & escaped, which JSON
// readers read as the characters.
func writeCreated(w http.ResponseWriter, taskID string) {
	var body []byte
	if needsEscape(taskID) {
		body = append(append(append(body, `{"id":`...), quoted(taskID)...), "}\n"...)
	} else {
		body = make([]byte, 0, len(taskID)+10)
		body = append(append(append(body, `{"id":"`...), taskID...), "\"}\n"...)
	}
	apierror.OwnJSON(w.Header())
	w.WriteHeader(http.StatusOK)
	// The status is sent; a failed write means the client is gone.
	_, _ = w.Write(body)
}

// checkDrafts refuses draft_task ids that do not name a video task of the caller's account; an
// unknown id and another account's id get the same answer. A draft binds the create to the
// upstream that made it (see providers.Provider.Bound), which it returns (nil without drafts): the
// draft lives there, and its id goes to no other upstream. A draft of another provider, or of an
// upstream that left the config or whose name now stands for another base URL, is refused like
// an unknown one, as are drafts of two upstreams.
func (h *Handler) checkDrafts(ctx context.Context, id auth.Identity, p *providers.Provider, drafts []DraftTaskRef) (*providers.Upstream, error) {
	var bound *providers.Upstream
	for _, d := range drafts {
		t, err := h.owned(ctx, id, d.ID)
		if err == errTaskNotExist {
			return nil, invalid(d.Param, "names no task of this account")
		} else if err != nil {
			return nil, err
		}
		u, ok := p.Bound(t.Upstream, t.UpstreamAddress)
		if t.Provider != p.Name || !ok || bound != nil && bound != u {
			return nil, invalid(d.Param, "names no task of this account")
		}
		bound = u
	}
	return bound, nil
}

// hold holds the estimate of a task for a priced model against the account's balance and the
// key's budget (402 when it does not fit). The hold is bound to the task once its record is
// stored; until then, one the reconciler finds open past its deadline is released, and with it
// the create's active slot (accounting.SlotRef).
func (h *Handler) hold(ctx context.Context, id auth.Identity, req CreateRequest, slot accounting.Slot) (accounting.Hold, error) {
	if h.Accounting == nil {
		return accounting.Hold{}, nil
	}
	return h.Accounting.HoldForTask(ctx, id, req.Model, slot.HoldRef(), func(p *billing.Price) billing.Estimate {
		return p.EstimateVideo(req.Billing)
	}, storage.DefaultHoldDeadline)
}

// startTask applies the key's active-task limit and marks the request accepted.
func (h *Handler) startTask(ctx context.Context, id auth.Identity, model string) (accounting.Slot, error) {
	if h.Accounting == nil {
		usage.From(ctx).Accepted()
		return accounting.Slot{}, nil
	}
	slot, err := h.Accounting.StartTaskFor(ctx, id, model)
	if err != nil {
		return accounting.Slot{}, err
	}
	usage.From(ctx).Accepted()
	return slot, nil
}

func (h *Handler) maxBody() int64 {
	if h.MaxBodyBytes > 0 {
		return h.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

func (h *Handler) retention() time.Duration {
	if h.Retention > 0 {
		return h.Retention
	}
	return storage.DefaultTaskRetention
}

// upstream is the client for provider calls.
func (h *Handler) upstream() upstream.Client {
	return upstream.Client{HTTP: h.Client, Logger: h.Logger}
}

func writeJSON(w http.ResponseWriter, v any) {
	// The status is sent; a failed write means the client is gone.
	_ = apierror.WriteJSON(w, http.StatusOK, v)
}
