package passthrough

import (
	"bytes"
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

// CreatedWriter sits between reverse_proxy and the client on requests that create upstream
// objects (route.Creates). It finds the id in the successful answer and records the caller as its
// owner before any byte that carries the id reaches the client:
//
//   - a JSON answer is held whole (up to DefaultMaxCreateAnswer), its top-level id or task_id
//     recorded, then sent;
//   - an SSE answer stays streamed: events pass one by one, each held only until it is complete,
//     and the first event that carries an id (id, or response.id as in the Responses API) is
//     recorded before it is sent.
//
// If the owner cannot be recorded the client gets a 500 and never the id (for SSE, the stream ends
// before that event). Error answers pass through untouched.
type CreatedWriter struct {
	http.ResponseWriter
	record func(objectID string) error
	logger *zap.Logger
	limit  int

	status  int // held status, 0 before WriteHeader
	mode    int
	pending bytes.Buffer
	scanned int // bytes of pending already searched for an event's end
	failed  bool
}

const (
	modeUndecided = iota
	modeBuffer    // a JSON answer, held whole
	modeEvents    // an SSE answer, held event by event until an id is recorded
	modePass      // everything passes
)

// ownerRecordTimeout bounds the store write that records a created object's owner.
const ownerRecordTimeout = 10 * time.Second

// Created wraps w for a create request routed by route: see CreatedWriter. Call Finish when the
// proxy is done.
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
	return &CreatedWriter{
		ResponseWriter: w,
		record: func(objectID string) error {
			ctx, cancel := context.WithTimeout(ctx, ownerRecordTimeout)
			defer cancel()
			return rt.recordOwner(ctx, id, route, objectID)
		},
		logger: logger,
		limit:  limit,
	}
}

// WriteHeader holds a success status until the id is recorded; other statuses pass.
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
			cw.logger.Warn("create answer too large to find its id; passed through unrecorded", zap.Int("limit", cw.limit))
			if err := cw.release(); err != nil {
				return 0, err
			}
			cw.mode = modePass
		}
		return len(p), nil
	case modeEvents:
		cw.pending.Write(p)
		return len(p), cw.events()
	}
	return cw.ResponseWriter.Write(p)
}

// events sends every complete held event, recording the first id found first.
func (cw *CreatedWriter) events() error {
	for cw.mode == modeEvents {
		b := cw.pending.Bytes()
		from := max(cw.scanned-3, 0) // a separator may straddle two writes
		end := eventEnd(b[from:])
		if end < 0 {
			cw.scanned = len(b)
			if len(b) > maxPendingEvent {
				cw.logger.Warn("server-sent event too large to find an id; passed through unrecorded")
				cw.mode = modePass
				return cw.release()
			}
			return nil
		}
		end += from
		cw.scanned = 0
		if objectID := eventID(b[:end]); objectID != "" {
			if err := cw.record(objectID); err != nil {
				cw.failed = true
				cw.logger.Error("recording the owner of a streamed create failed; stream cut", zap.Error(err))
				return err
			}
			cw.mode = modePass
			return cw.release()
		}
		cw.sendHeader()
		event := bytes.Clone(b[:end])
		cw.pending.Next(end)
		if _, err := cw.ResponseWriter.Write(event); err != nil {
			return err
		}
	}
	return nil
}

// Finish completes the answer once the proxy is done: a held JSON answer is examined, its id
// recorded, then sent.
func (cw *CreatedWriter) Finish() {
	switch cw.mode {
	case modeBuffer:
		body := cw.pending.Bytes()
		objectID, err := answerID(body)
		if err == nil && objectID != "" {
			err = cw.record(objectID)
		}
		if err != nil {
			cw.fail(err)
			return
		}
		if err := cw.release(); err != nil {
			cw.logger.Debug("sending a create answer failed", zap.Error(err))
		}
	case modeEvents:
		if err := cw.release(); err != nil { // a last event without its blank line
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
	apierror.Internal(cw.ResponseWriter, apierror.OpenAIShape, cw.logger, err)
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

// FlushError flushes what has been sent; held bytes stay held.
func (cw *CreatedWriter) FlushError() error {
	if cw.mode == modePass || (cw.mode == modeEvents && cw.status == 0) {
		return http.NewResponseController(cw.ResponseWriter).Flush()
	}
	return nil
}

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

// eventEnd returns the length of the first complete event in b (through its blank line), or -1.
func eventEnd(b []byte) int {
	lf, crlf := bytes.Index(b, []byte("\n\n")), bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case lf >= 0 && (crlf < 0 || lf < crlf):
		return lf + 2
	case crlf >= 0:
		return crlf + 4
	}
	return -1
}

// eventID returns the object id a server-sent event carries in its data: the data object's
// response.id (Responses API) or its own id.
func eventID(event []byte) string {
	var data []byte
	for line := range bytes.Lines(event) {
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	var e struct {
		ID       string `json:"id"`
		Response *struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	if len(data) == 0 || json.Unmarshal(data, &e) != nil {
		return ""
	}
	if e.Response != nil && e.Response.ID != "" {
		return e.Response.ID
	}
	return e.ID
}

// Interface guards
var (
	_ http.ResponseWriter             = (*CreatedWriter)(nil)
	_ interface{ FlushError() error } = (*CreatedWriter)(nil)
)
