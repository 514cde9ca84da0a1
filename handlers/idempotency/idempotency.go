// Package idempotency makes creates safe to retry. A request with an Idempotency-Key header is
// run once per key and account: the same key with the same body within the retention gets the
// first answer again (with Idempotent-Replayed: true) and causes no new upstream work; the same
// key with a different body is refused with 422 (a form counts by its parts, not its boundary:
// requestHash); a retry while the first is still running gets 409.
//
// Only answers of requests that reached the upstream are kept (the handler says so with
// MarkForwarded). Answers the gateway gave on its own (validation 400s, 402 over quota, 409,
// 429 rate and slot limits) and every 5xx are not kept: the key is freed, so a retry with the
// same key after a 429 goes through (Stripe's rule).
//
// The handler may say more: MarkMade keeps an error answer of something made; MarkUnmade frees the
// key whatever the answer (nothing was made or charged); MarkCut never replays an answer cut off
// midway (its key is spent without it unless nothing was made).
package idempotency

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/storage"
)

// Header is the request header that carries the key.
const Header = "Idempotency-Key"

// Defaults.
const (
	DefaultRetention = 24 * time.Hour
	// InFlightLease is how long a key stays in flight after its owner was last heard from. The
	// owner renews it every InFlightLease/3 while its request runs, however long; a gateway killed
	// mid-request stops renewing, and a retry with the same key runs the request once the lease
	// has run out (until then it gets 409 idempotency_in_progress).
	InFlightLease = 30 * time.Second
	// MinLease is the shortest lease Guard.Lease may be: Badger counts expiry in whole seconds,
	// so a shorter one could run out before its first renewal.
	MinLease  = 3 * time.Second
	maxKeyLen = 255
)

// Guard runs requests once per idempotency key.
type Guard struct {
	Store storage.Store
	// Retention is how long an answer is kept for replay. Default: 24h.
	Retention time.Duration
	// Lease is how long a key stays in flight without its owner renewing it. Default:
	// InFlightLease.
	Lease time.Duration
	// Wait is how long a retry whose first request is still running waits for that request to
	// end (its answer is then replayed, or the retry runs when the first one kept nothing)
	// before it is answered 409 idempotency_in_progress. Default: 0, no wait.
	Wait time.Duration
	// MaxAnswer is the largest answer body kept for replay, in bytes. A larger answer spends
	// its key without keeping the answer: a retry gets 409 idempotency_answer_not_kept and is
	// not run again (nothing is made or charged twice). Default and upper bound:
	// storage.MaxIdempotentAnswer (8 MiB, room for an edit's image or two in base64).
	MaxAnswer int64
	Logger    *zap.Logger
}

func (g *Guard) maxAnswer() int {
	if g.MaxAnswer > 0 && g.MaxAnswer < storage.MaxIdempotentAnswer {
		return int(g.MaxAnswer)
	}
	return storage.MaxIdempotentAnswer
}

func (g *Guard) lease() time.Duration {
	if g.Lease > 0 {
		return g.Lease
	}
	return InFlightLease
}

// marksKey is the context key of what the handler behind the guard tells it (requestMarks).
type marksKey struct{}

// requestMarks are what the handler behind the guard tells it about its request.
type requestMarks struct {
	forwarded, made, unmade, cut atomic.Bool
	// key is where the guard keeps the request's answer (RecordKey).
	key string
}

// RecordKey is the key under which the guard keeps the answer of the request whose context this
// is: its scope (account and endpoint) and the SHA-256 of its Idempotency-Key, never the key
// itself; "" for a request that came without one. A create writes it with the record of what it
// made (storage.Task.IdempotencyKey), so that a retry whose answer was never kept (the gateway
// died after the record, before the answer) finds what was made instead of making it again.
func RecordKey(ctx context.Context) string {
	if m, ok := ctx.Value(marksKey{}).(*requestMarks); ok {
		return m.key
	}
	return ""
}

// MarkForwarded records that the request whose context this is has been sent to the upstream,
// so that its answer is kept for replay. Handlers call it right before the upstream call.
func MarkForwarded(ctx context.Context) {
	if m, ok := ctx.Value(marksKey{}).(*requestMarks); ok {
		m.forwarded.Store(true)
	}
}

// MarkMade records that the upstream made what the request asked for (and bills it, so the
// request was charged) although its answer is an error: an edit answered past max_answer, a
// task whose id cannot be used or whose record could not be written. Its answer is then kept
// like a success's, so that a retry with the same key gets it again instead of making, and
// paying for, the same thing again.
func MarkMade(ctx context.Context) {
	if m, ok := ctx.Value(marksKey{}).(*requestMarks); ok {
		m.made.Store(true)
	}
}

// MarkUnmade records that the upstream made nothing the request is charged for (its hold was
// released, or its answer is no creation): whatever its answer, the key is freed and a retry
// runs again. MarkMade outweighs it.
func MarkUnmade(ctx context.Context) {
	if m, ok := ctx.Value(marksKey{}).(*requestMarks); ok {
		m.unmade.Store(true)
	}
}

// MarkCut records that the answer was cut off midway (reverse_proxy aborted it): it is never
// replayed. Unless the request is MarkUnmade, its key is spent without the answer (a retry gets
// 409 idempotency_answer_not_kept), as what was made or charged is not made again.
func MarkCut(ctx context.Context) {
	if m, ok := ctx.Value(marksKey{}).(*requestMarks); ok {
		m.cut.Store(true)
	}
}

// CheckKey refuses (400 invalid_request) an Idempotency-Key header that is sent but is no key:
// empty (a client's unset variable), over 255 characters, not printable ASCII, or sent twice
// (which one a retry would be matched on is unclear). No header at all is fine.
func CheckKey(h http.Header) error {
	keys := h.Values(Header)
	if len(keys) == 0 {
		return nil
	}
	if len(keys) > 1 || !validKey(keys[0]) {
		return errKey
	}
	return nil
}

// Requested reports whether r carries an Idempotency-Key header (valid or not): only such a
// request needs Serve, which would pass any other straight to next.
func Requested(r *http.Request) bool {
	_, ok := r.Header[Header]
	return ok
}

// keep reports whether an answer is kept for replay (or, whole false, its key freed), and
// whether it is kept whole or only as spent (an answer cut off midway).
func keep(m *requestMarks, status int) (kept, whole bool) {
	switch {
	case status == 0:
		return false, false
	case m.made.Load():
		return true, !m.cut.Load()
	case m.unmade.Load(), !m.forwarded.Load(), status >= 500:
		return false, false
	case status == http.StatusPaymentRequired, status == http.StatusConflict, status == http.StatusTooManyRequests:
		return false, false
	}
	return true, !m.cut.Load()
}

var (
	errKey      = apierror.New(http.StatusBadRequest, "invalid_request", "Idempotency-Key must be one header of 1 to 255 printable ASCII characters").WithParam(Header)
	errReused   = apierror.New(http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used with a different request body")
	errInFlight = apierror.New(http.StatusConflict, "idempotency_in_progress", "a request with this Idempotency-Key is still being processed; retry later")
)

// Serve runs next once per (scope, Idempotency-Key); without the header it just runs next. scope
// separates accounts and endpoints. The body is read (up to maxBody) to compare retries.
func (g *Guard) Serve(w http.ResponseWriter, r *http.Request, scope string, shape apierror.Shape, maxBody int64, next http.HandlerFunc) {
	g.ServeFor(w, r, scope, shape, maxBody, nil, next)
}

// MayAsk decides, from a create's body, whether the caller may have its answer: when it may not
// (a key restricted to some models naming another), it writes the refusal that the create itself
// would have answered and returns false.
type MayAsk func(w http.ResponseWriter, body []byte) bool

// ServeFor is Serve for a caller that may not have every answer of its scope: a scope is an
// account's, and a key of the account may be restricted to some models. Before the key is
// claimed or an answer replayed, mayAsk (nil: every caller may) reads the body; a refused caller
// gets the create's own refusal, never the answer another key's request stored.
func (g *Guard) ServeFor(w http.ResponseWriter, r *http.Request, scope string, shape apierror.Shape, maxBody int64, mayAsk MayAsk, next http.HandlerFunc) {
	keys := r.Header.Values(Header)
	if len(keys) == 0 {
		next(w, r)
		return
	}
	if err := CheckKey(r.Header); err != nil {
		apierror.Respond(w, shape, g.Logger, err)
		return
	}
	key := keys[0]
	body, err := apierror.ReadBody(w, r, maxBody, "invalid_request")
	if err != nil {
		apierror.Respond(w, shape, g.Logger, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if mayAsk != nil && !mayAsk(w, body) {
		return
	}
	g.Run(w, r, scope, key, requestHash(r.Method, r.URL.Path, r.Header.Get("Content-Type"), body), shape, next)
}

// Run is ServeFor for a caller that has checked the key and read the body itself: reqHash is
// what a retry must match (the same method, path and body give the same hash). next runs when
// the key is new; a key whose request was made gets its answer again, one whose request is
// still running waits for it up to Wait, then gets 409 idempotency_in_progress. Either way a
// retry of a request that ran reaches nothing behind the guard.
func (g *Guard) Run(w http.ResponseWriter, r *http.Request, scope, key, reqHash string, shape apierror.Shape, next http.HandlerFunc) {
	storeKey := scope + "/" + HashOf(key)
	owner := storage.NewClaimToken()
	claimed, err := g.claim(r.Context(), w, shape, storeKey, storage.IdempotencyRecord{Owner: owner, InFlight: true, RequestHash: reqHash})
	if err != nil {
		apierror.Internal(w, shape, g.Logger, err)
		return
	}
	if !claimed {
		return
	}

	marks := &requestMarks{key: storeKey}
	r = r.WithContext(context.WithValue(r.Context(), marksKey{}, marks))
	rec := &recorder{ResponseWriter: w, limit: g.maxAnswer()}
	// A handler that panics stops the renewals too: its key is freed when its lease runs out.
	stopRenewing := g.renewLease(r.Context(), storeKey, owner)
	defer stopRenewing()
	next(rec, r)
	stopRenewing()
	ctx := context.WithoutCancel(r.Context())
	kept, whole := keep(marks, rec.status)
	if !kept {
		g.abandon(ctx, storeKey, owner)
		return
	}
	done := storage.IdempotencyRecord{Owner: owner, RequestHash: reqHash, Status: rec.status, ContentType: rec.Header().Get("Content-Type"), Body: rec.body.Bytes()}
	switch {
	case !whole:
		done = unkept(owner, reqHash, shape, rec, errCut)
	case rec.overflow:
		done = unkept(owner, reqHash, shape, rec, errTooLargeToKeep)
	}
	err = g.Store.CompleteIdempotent(ctx, storeKey, done, g.retention())
	if err == nil || errors.Is(err, storage.ErrConflict) {
		if err != nil {
			g.Logger.Warn("storing an idempotent answer: the key's lease was lost meanwhile", zap.Error(err))
		}
		return
	}
	// The store refused the answer (out of memory, a failed write): the key is spent all the
	// same, without the answer, so that a retry is not made again. A store out of memory may
	// free some: the small record is tried a few times before the key is given up.
	g.Logger.Error("storing an idempotent answer; keeping its key without it", zap.Error(err))
	done = unkept(owner, reqHash, shape, rec, errStoreRefused)
	for try := range unkeptTries {
		time.Sleep(time.Duration(try) * unkeptPause)
		if err = g.Store.CompleteIdempotent(ctx, storeKey, done, g.retention()); err == nil || errors.Is(err, storage.ErrConflict) {
			return
		}
	}
	g.Logger.Error("keeping an idempotency key without its answer; freeing it", zap.Error(err))
	g.abandon(ctx, storeKey, owner)
}

// claim claims storeKey for rec, or answers the retry that finds it claimed (and returns false).
// A first request still in flight is waited for up to Wait, the store asked again after
// waitPause, doubling up to maxWaitPause, and once more at the end of Wait: should it end meanwhile its answer is replayed, or the
// key is claimed when it kept none. A store call that fails because the request's context ended
// (its client left) is answered 409 idempotency_in_progress, which is no store failure to log.
func (g *Guard) claim(ctx context.Context, w http.ResponseWriter, shape apierror.Shape, storeKey string, rec storage.IdempotencyRecord) (bool, error) {
	deadline := time.Now().Add(g.Wait)
	pause := waitPause
	for {
		existing, claimed, err := g.Store.BeginIdempotent(ctx, storeKey, rec, g.lease())
		if err != nil && ctx.Err() != nil {
			apierror.Write(w, shape, errInFlight.WithRetryAfter(time.Second))
			return false, nil
		}
		if err != nil || claimed {
			return claimed, err
		}
		left := time.Until(deadline)
		if !existing.InFlight || existing.RequestHash != rec.RequestHash || left <= 0 {
			g.answerRetry(w, shape, existing, rec.RequestHash)
			return false, nil
		}
		select {
		case <-ctx.Done():
			g.answerRetry(w, shape, existing, rec.RequestHash)
			return false, nil
		case <-time.After(min(pause, left)):
		}
		pause = min(2*pause, maxWaitPause)
	}
}

// The first and the longest pause between the store reads of a retry waiting for its first
// request (Guard.Wait): each read is a write attempt, so a long wait reads seldom.
const (
	waitPause    = 100 * time.Millisecond
	maxWaitPause = time.Second
)

// How often, and how far apart, a spent key is tried to be kept without its answer.
const (
	unkeptTries = 6
	unkeptPause = 150 * time.Millisecond
)

// abandon frees owner's claim on storeKey.
func (g *Guard) abandon(ctx context.Context, storeKey, owner string) {
	if err := g.Store.AbandonIdempotent(ctx, storeKey, owner); err != nil {
		// The key stays in flight until its lease runs out: retries get 409 until then.
		g.Logger.Error("freeing an idempotency key", zap.Error(err))
	}
}

// errEarlierUnkept answers a retry of a key an earlier version spent without keeping its answer.
var errEarlierUnkept = apierror.New(http.StatusConflict, "idempotency_answer_not_kept",
	"the request with this Idempotency-Key was made, but its answer was too large to keep for a replay; it is not made again: send a new Idempotency-Key to make a new request")

// Why an answer is not kept with its key.
var (
	errTooLargeToKeep = errors.New("was larger than the gateway keeps for a replay")
	errStoreRefused   = errors.New("could not be stored for a replay")
	errCut            = errors.New("was cut off midway")
)

// unkept is the record of a request made whose answer is not kept (why): its key is spent, and a
// retry gets 409 idempotency_answer_not_kept. The record holds that 409 as its answer, so that a
// gateway of an earlier version, which replays any answer it finds, replays the 409 too.
func unkept(owner, reqHash string, shape apierror.Shape, rec *recorder, why error) storage.IdempotencyRecord {
	e := apierror.New(http.StatusConflict, "idempotency_answer_not_kept", fmt.Sprintf(
		"the request with this Idempotency-Key was made (its answer: status %d, %d bytes), but its answer %v; it is not made again: send a new Idempotency-Key to make a new request",
		rec.status, rec.size, why))
	return storage.IdempotencyRecord{Owner: owner, RequestHash: reqHash, Status: e.Status, ContentType: "application/json",
		Body: apierror.Encode(shape, e), Unkept: true}
}

// renewLease keeps owner's lease on storeKey alive every third of the lease until the returned
// func is called. A lease found lost (expired and taken by a retry) is not renewed again; the
// answer is then not stored either, as CompleteIdempotent refuses a record it no longer owns.
func (g *Guard) renewLease(ctx context.Context, storeKey, owner string) (stop func()) {
	ctx = context.WithoutCancel(ctx)
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	lease := g.lease()
	t = time.AfterFunc(lease/3, func() {
		err := g.Store.RenewIdempotent(ctx, storeKey, owner, lease)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case stopped:
		case errors.Is(err, storage.ErrConflict):
			g.Logger.Warn("idempotency key lease lost while its request ran")
		default:
			if err != nil {
				g.Logger.Error("renewing an idempotency key lease", zap.Error(err))
			}
			t.Reset(lease / 3)
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		t.Stop()
	}
}

// answerRetry answers a request whose key was claimed before.
func (g *Guard) answerRetry(w http.ResponseWriter, shape apierror.Shape, rec storage.IdempotencyRecord, reqHash string) {
	switch {
	case rec.RequestHash != reqHash:
		apierror.Write(w, shape, errReused)
	case rec.InFlight:
		apierror.Write(w, shape, errInFlight.WithRetryAfter(time.Second))
	case rec.Unkept && len(rec.Body) == 0:
		// Spent by an earlier version, which kept the first answer's status alone (no 409 to
		// replay): its 409 is answered all the same, never an empty answer of that status.
		w.Header().Set("X-Should-Retry", "false")
		apierror.Write(w, shape, errEarlierUnkept)
	default:
		if rec.Unkept {
			// Another try gets the same: tell the OpenAI SDKs, which retry every 409.
			w.Header().Set("X-Should-Retry", "false")
		}
		// The answer is replayed as the first one went out: its type, and nosniff, so that a
		// browser takes that type as it is (an answer kept without a type is not sniffed into
		// a page either).
		if rec.ContentType != "" {
			w.Header().Set("Content-Type", rec.ContentType)
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(rec.Status)
		_, _ = w.Write(rec.Body)
	}
}

func (g *Guard) retention() time.Duration {
	if g.Retention > 0 {
		return g.Retention
	}
	return DefaultRetention
}

func validKey(key string) bool {
	if len(key) == 0 || len(key) > maxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// recorder passes the answer through and keeps a copy of it, up to limit bytes; past them it
// drops the copy (overflow) and only counts the answer's size.
type recorder struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
	limit    int
	size     int64
	overflow bool
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	// The copy is of what the handler answered, also when the client is gone (a retry is
	// what such a client sends next).
	r.size += int64(len(b))
	switch {
	case r.overflow:
	case r.body.Len()+len(b) > r.limit:
		r.overflow = true
		r.body = bytes.Buffer{}
	default:
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap is the writer the recorder passes the answer to, for http.ResponseController: a
// handler's write deadline and flushes reach the client's connection through the recorder.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
