package passthrough

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// Bounds of what CreatedWriter holds back while looking for the created object's id.
const (
	// DefaultMaxCreateAnswer bounds a non-streaming create answer, which is held whole until its
	// id is recorded. A larger answer passes through unrecorded (its id, if any, then answers
	// 404 to everyone, its creator included).
	DefaultMaxCreateAnswer = 16 << 20
	// maxPendingEvent bounds one server-sent event held until it is read.
	maxPendingEvent = 1 << 20
)

// CreatedWriter sits between reverse_proxy and the client on requests whose answers carry ids to
// record: the id of a created upstream object (route.Creates), and the ids of the response items
// an answer reveals (route.RevealsItems; see items.go). It records the caller as their owner:
//
//   - a JSON answer is held whole (up to DefaultMaxCreateAnswer): its top-level id or task_id is
//     recorded, then its items in one batch, then it is sent;
//   - an SSE answer stays streamed: events pass one by one, each held only until it is complete.
//     The first event that carries an object id (id, or response.id as in the Responses API) is
//     recorded before it is sent; item ids are collected as events pass and recorded in one batch
//     before the terminal event (see items.go), before an event too large to read, and at the
//     end.
//
// If an owner cannot be recorded the client gets a 500 and never the answer (for SSE, the stream
// ends before the event that needed the record). Error answers pass through untouched.
type CreatedWriter struct {
	http.ResponseWriter
	// Shape is the error shape of the endpoint the client called (its 500, when the owner
	// cannot be recorded): set it from the request before Route rewrote its path. The zero
	// value is the OpenAI shape.
	Shape apierror.Shape
	// Streamed, when set, is called once the answer turns out to be an event stream (its
	// success status with Content-Type text/event-stream), before any of it is written.
	Streamed func()
	// record records the owner of a created object's id, with the answer that carries it when
	// it is held whole (JSON; nil for a stream); nil when there is none to record, or once it
	// is recorded.
	record func(objectID string, answer []byte) error
	// claim records the owner of a batch of item ids; nil when the answer reveals no items.
	claim  func(ids []string) error
	items  answerItemIDs
	logger *zap.Logger
	limit  int
	// eventLimit bounds one held event; 0 is maxPendingEvent.
	eventLimit int

	status  int // held status, 0 before WriteHeader
	mode    int
	pending bytes.Buffer
	scanned int // bytes of pending already searched for an event's end
	failed  bool
	// keptSlot is set when the created object's record keeps the route's active-task slot;
	// keptObjects are the ids of the records that keep it.
	keptSlot    bool
	keptObjects []string
	// heldBy is the id of the created video or image task whose record carries the create's
	// hold; endedAs is the final status its create's answer showed already (see EndedAtOnce).
	heldBy, endedAs string
	// replayed is set when the answer's object was recorded already by a create with the same
	// Idempotency-Key (see Replayed).
	replayed bool
	// unrecorded is set when a created object's owner could not be recorded (see Unrecorded).
	unrecorded bool
}

const (
	modeUndecided = iota
	modeBuffer    // a JSON answer, held whole
	modeEvents    // an SSE answer, held event by event while ids remain to be recorded
	modeSkip      // an SSE event too large to hold, passing through to its end
	modePass      // everything passes
)

// ownerRecordTimeout bounds the store write that records a created object's owner.
const ownerRecordTimeout = 10 * time.Second

// Created wraps w for a request routed by route whose answer has ids to record (route.Records):
// see CreatedWriter. Call Finish when the proxy is done.
func (rt *Router) Created(w http.ResponseWriter, r *http.Request, id auth.Identity, route Route) *CreatedWriter {
	limit := rt.MaxCreateAnswer
	if limit <= 0 {
		limit = DefaultMaxCreateAnswer
	}
	// The record is written even when the client has gone meanwhile: an object the upstream
	// created must not be left without its owner.
	ctx := context.WithoutCancel(r.Context())
	logger := rt.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	cw := &CreatedWriter{ResponseWriter: w, logger: logger, limit: limit}
	if route.Creates != "" {
		cw.record = func(objectID string, answer []byte) error {
			ctx, cancel := context.WithTimeout(ctx, ownerRecordTimeout)
			defer cancel()
			carry := cw.heldBy == "" && route.Hold.ID != "" && recordCarriesHold(route.Creates, answer)
			rec, err := rt.recordOwner(ctx, id, route, objectID, answer, carry)
			cw.keptSlot = cw.keptSlot || rec.kept
			if rec.kept {
				cw.keptObjects = append(cw.keptObjects, objectID)
			}
			if rec.carried {
				cw.heldBy = objectID
				cw.endedAs = createdFinal(route.Creates, rec.kept, answer)
			}
			cw.replayed = cw.replayed || rec.replay
			return err
		}
	}
	if route.RevealsItems {
		cw.claim = func(ids []string) error {
			ctx, cancel := context.WithTimeout(ctx, ownerRecordTimeout)
			defer cancel()
			return rt.claimItems(ctx, id, route.Model, ids)
		}
	}
	return cw
}

// WriteHeader holds a success status until the ids are recorded; other statuses pass.
func (cw *CreatedWriter) WriteHeader(status int) {
	if cw.mode != modeUndecided || status < 200 {
		cw.ResponseWriter.WriteHeader(status)
		return
	}
	if status >= 300 {
		cw.mode = modePass
		cw.ResponseWriter.WriteHeader(status)
		return
	}
	cw.status = status
	mt, _, _ := mime.ParseMediaType(cw.Header().Get("Content-Type"))
	if mt == "text/event-stream" {
		cw.mode = modeEvents
		if cw.Streamed != nil {
			cw.Streamed()
		}
	} else {
		cw.mode = modeBuffer
	}
}

func (cw *CreatedWriter) Write(p []byte) (int, error) {
	if cw.mode == modeUndecided {
		cw.WriteHeader(http.StatusOK)
	}
	if cw.failed {
		return 0, errors.New("the answer was withheld: its owner could not be recorded")
	}
	switch cw.mode {
	case modeBuffer:
		cw.pending.Write(p)
		if cw.pending.Len() > cw.limit {
			cw.logger.Warn("answer too large to find its ids; passed through unrecorded", zap.Int("limit", cw.limit))
			if err := cw.release(); err != nil {
				return 0, err
			}
			cw.mode = modePass
		}
		return len(p), nil
	case modeEvents:
		cw.pending.Write(p)
		return len(p), cw.events()
	case modeSkip:
		cw.pending.Write(p)
		return len(p), cw.skip()
	}
	return cw.ResponseWriter.Write(p)
}

// Finish completes the answer once the proxy is done: a held JSON answer is examined, its ids
// recorded, then sent; the item ids of a stream not recorded yet are recorded before its last
// held bytes are sent.
func (cw *CreatedWriter) Finish() {
	switch cw.mode {
	case modeBuffer:
		body := cw.pending.Bytes()
		// The object's record and its items' are two writes; they run at once, so that a
		// store that shares one disk sync between concurrent writers (Badger) waits for one.
		var claimed chan error
		if cw.claim != nil {
			if cw.items.add(answerItems(body)) {
				cw.logger.Warn("too many items in one answer; the rest are not recorded", zap.Int("limit", maxAnswerItems))
			}
			if len(cw.items.pending) > 0 {
				claimed = make(chan error, 1)
				go func() { claimed <- cw.claimItems() }()
			}
		}
		var err error
		if cw.record != nil {
			var objectID string
			objectID, err = answerID(body)
			if err == nil && objectID != "" {
				err = cw.record(objectID, body)
			}
			cw.unrecorded = err != nil
		}
		if claimed != nil {
			err = cmp.Or(err, <-claimed)
		}
		if err != nil {
			cw.fail(err)
			return
		}
		if err := cw.release(); err != nil {
			cw.logger.Debug("sending an answer failed", zap.Error(err))
		}
	case modeEvents, modeSkip:
		if cw.failed {
			return
		}
		if cw.mode == modeEvents && cw.claim != nil {
			// A last event without its blank line.
			if e, ok := readEvent(cw.pending.Bytes()); ok {
				cw.items.add(e.items())
			}
		}
		if err := cw.claimItems(); err != nil {
			cw.failed = true
			cw.logger.Error("recording the owner of a streamed answer's items failed; its end withheld", zap.Error(err))
			return
		}
		if err := cw.release(); err != nil {
			cw.logger.Debug("sending the end of a stream failed", zap.Error(err))
		}
	}
}

// fail answers 500 instead of a held answer whose owner was not recorded.
func (cw *CreatedWriter) fail(err error) {
	cw.failed = true
	h := cw.Header()
	for k := range h {
		delete(h, k)
	}
	cw.mode = modePass
	apierror.Internal(cw.ResponseWriter, cw.Shape, cw.logger, err)
}

// release sends the held status and bytes.
func (cw *CreatedWriter) release() error {
	cw.sendHeader()
	if cw.pending.Len() == 0 {
		return nil
	}
	_, err := cw.ResponseWriter.Write(cw.pending.Bytes())
	cw.pending.Reset()
	return err
}

func (cw *CreatedWriter) sendHeader() {
	if cw.status != 0 {
		cw.ResponseWriter.WriteHeader(cw.status)
		cw.status = 0
	}
}

// KeptSlot reports whether the created object's record keeps the route's active-task slot
// (Route.Slot); when it does not, the caller gives the slot back.
func (cw *CreatedWriter) KeptSlot() bool { return cw.keptSlot }

// KeptObjects are the ids of the created objects whose records keep the route's active-task slot
// (see KeptSlot).
func (cw *CreatedWriter) KeptObjects() []string { return cw.keptObjects }

// HeldBy is the id of the created video or image task whose record carries the create's hold (Route.Hold),
// or "" when none does: the caller then hands the hold over to it (accounting.Hold.BindTo)
// instead of ending it with the request.
func (cw *CreatedWriter) HeldBy() string { return cw.heldBy }

// ReplayReleaseNote is the ledger's note on the release of a create's hold that Replayed.
const ReplayReleaseNote = "a replay: the provider answered a retry (the same Idempotency-Key) with the object its first attempt made, which pays for it"

// Replayed reports whether the answer named an object that an earlier create of the account
// made and recorded with the same Idempotency-Key: the provider, which keeps answers by that key,
// answered a retry (an SDK resends the key it sent first) with what the first attempt made, and
// that attempt pays for it. The caller releases this request's hold, so that one object is not
// paid for twice. Another key, or none, is no replay (see replayOf).
func (cw *CreatedWriter) Replayed() bool { return cw.replayed }

// FlushError flushes what has been sent; held bytes stay held.
func (cw *CreatedWriter) FlushError() error {
	if cw.mode == modePass || ((cw.mode == modeEvents || cw.mode == modeSkip) && cw.status == 0) {
		return http.NewResponseController(cw.ResponseWriter).Flush()
	}
	return nil
}

// Unrecorded reports that the upstream answered a create with success but the created object's
// owner could not be recorded (the store failed; the answer's id was ambiguous, or another
// account's): the client was answered 500 and never got the id, yet the provider may be making
// the object, and bills it.
func (cw *CreatedWriter) Unrecorded() bool { return cw.unrecorded }

// Unwrap lets http.ResponseController reach the connection for deadlines.
func (cw *CreatedWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }

// answerID returns the top-level id (or task_id) of a JSON answer, or "" when it has none. An
// answer whose id or task_id key repeats or comes in another case is an error: its id would be
// ambiguous. Other repeated keys of the upstream's answer do not matter here.
func answerID(body []byte) (string, error) {
	m, err := jsonkeys.Members(body, "id", "task_id")
	if errors.Is(err, jsonkeys.ErrNotObject) {
		return "", nil // not a JSON object: no id to record
	}
	if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
		if e.Field == "id" || e.Field == "task_id" {
			return "", err
		}
		if err := json.Unmarshal(body, &m); err != nil {
			return "", err
		}
	}
	for _, name := range []string{"id", "task_id"} {
		var s string
		if raw, ok := m[name]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return s, nil
		}
	}
	return "", nil
}

// Interface guards
var (
	_ http.ResponseWriter             = (*CreatedWriter)(nil)
	_ interface{ FlushError() error } = (*CreatedWriter)(nil)
)
