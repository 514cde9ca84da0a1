// Package idempotency makes creates safe to retry. A request with an Idempotency-Key header is
// run once per key and account: the same key with the same body within the retention gets the
// first answer again (with Idempotent-Replayed: true) and causes no new upstream work; the same
// key with a different body is refused with 422; a retry while the first is still running gets
// 409. Answers with a 5xx status are not kept, so such a request can be retried with the same key.
package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
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
	// inFlightTTL frees a key whose first request never finished (the process died).
	inFlightTTL = 10 * time.Minute
	maxKeyLen   = 255
	maxKeptBody = 1 << 20
)

// Guard runs requests once per idempotency key.
type Guard struct {
	Store storage.Store
	// Retention is how long an answer is kept for replay. Default: 24h.
	Retention time.Duration
	Logger    *zap.Logger
}

type record struct {
	InFlight    bool   `json:"in_flight,omitempty"`
	RequestHash string `json:"request_hash"`
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Body        []byte `json:"body,omitempty"`
}

var (
	errKey      = apierror.New(http.StatusBadRequest, "invalid_request", "Idempotency-Key must be 1 to 255 printable ASCII characters").WithParam(Header)
	errReused   = apierror.New(http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used with a different request body")
	errInFlight = apierror.New(http.StatusConflict, "idempotency_in_progress", "a request with this Idempotency-Key is still being processed; retry later")
)

// Serve runs next once per (scope, Idempotency-Key); without the header it just runs next. scope
// separates accounts and endpoints. The body is read (up to maxBody) to compare retries.
func (g *Guard) Serve(w http.ResponseWriter, r *http.Request, scope string, shape apierror.Shape, maxBody int64, next http.HandlerFunc) {
	key := r.Header.Get(Header)
	if key == "" {
		next(w, r)
		return
	}
	if !validKey(key) {
		apierror.Write(w, shape, errKey)
		return
	}
	body, err := apierror.ReadBody(w, r, maxBody, "invalid_request")
	if err != nil {
		apierror.Respond(w, shape, g.Logger, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	reqHash := hashOf(r.Method, r.URL.Path, body)
	storeKey := "idem/" + scope + "/" + hashOf(key)

	claim, _ := json.Marshal(record{InFlight: true, RequestHash: reqHash})
	existing, claimed, err := g.Store.Claim(r.Context(), storeKey, claim, inFlightTTL)
	if err != nil {
		apierror.Internal(w, shape, g.Logger, err)
		return
	}
	if !claimed {
		g.answerRetry(w, shape, existing, reqHash)
		return
	}

	rec := &recorder{ResponseWriter: w}
	next(rec, r)
	if rec.status >= 500 || rec.status == 0 || rec.overflow {
		_ = g.Store.DeleteRecord(r.Context(), storeKey)
		return
	}
	done, _ := json.Marshal(record{RequestHash: reqHash, Status: rec.status, ContentType: rec.Header().Get("Content-Type"), Body: rec.body.Bytes()})
	if err := g.Store.PutRecord(r.Context(), storeKey, done, g.retention()); err != nil {
		g.Logger.Error("storing idempotent answer", zap.Error(err))
		_ = g.Store.DeleteRecord(r.Context(), storeKey)
	}
}

// answerRetry answers a request whose key was claimed before.
func (g *Guard) answerRetry(w http.ResponseWriter, shape apierror.Shape, existing []byte, reqHash string) {
	var rec record
	if err := json.Unmarshal(existing, &rec); err != nil {
		apierror.Internal(w, shape, g.Logger, err)
		return
	}
	switch {
	case rec.RequestHash != reqHash:
		apierror.Write(w, shape, errReused)
	case rec.InFlight:
		apierror.Write(w, shape, errInFlight.WithRetryAfter(time.Second))
	default:
		if rec.ContentType != "" {
			w.Header().Set("Content-Type", rec.ContentType)
		}
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
	if len(key) > maxKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

func hashOf(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			h.Write([]byte(v))
		case []byte:
			h.Write(v)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// recorder passes the answer through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	status   int
	body     bytes.Buffer
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
	if r.body.Len()+len(b) > maxKeptBody {
		r.overflow = true
	} else {
		r.body.Write(b)
	}
	return r.ResponseWriter.Write(b)
}
