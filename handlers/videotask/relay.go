package videotask

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/storage"
)

// RelayPath is the path under the relay base at which upstream callbacks arrive, followed by a
// per-task token.
const RelayPath = "/mediagw/callbacks/"

// relayToken makes an unguessable token and the callback URL the upstream is given.
func (h *Handler) relayToken() (token, callbackURL string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	return token, strings.TrimSuffix(h.RelayBase, "/") + RelayPath + token
}

// withCallback returns the create body with callback_url set to url.
func withCallback(body []byte, url string) ([]byte, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	fields["callback_url"] = mustJSON(url)
	return json.Marshal(fields)
}

// rememberRelay records which task a relay token belongs to (only its hash is stored), for as
// long as the task may run and its record is kept after that.
func (h *Handler) rememberRelay(ctx context.Context, token, taskID string) {
	if err := h.Store.SetRelayToken(ctx, hashToken(token), taskID, storage.MaxTaskRun+h.retention()); err != nil {
		h.Logger.Error("storing a callback relay token", zap.String("task_id", taskID), zap.Error(err))
	}
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

var errNoRelay = apierror.New(http.StatusNotFound, "not_found", "unknown callback")

// RelayToken returns the token of a relay path (…/mediagw/callbacks/<token>), or "".
func RelayToken(path string) string {
	_, token, _ := strings.Cut(path, RelayPath)
	return token
}

// ServeRelay receives an upstream's callback for a task, whose token (see RelayToken) the caller
// has taken from the request path. The callback is only a hint: it is not trusted, and the task
// is read from the upstream (in the background) before anything changes.
func (h *Handler) ServeRelay(w http.ResponseWriter, r *http.Request, token string) {
	if token == "" || r.Method != http.MethodPost {
		apierror.Write(w, apierror.OpenAIShape, errNoRelay)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<10))
	id, err := h.Store.RelayTask(r.Context(), hashToken(token))
	if err != nil {
		apierror.Write(w, apierror.OpenAIShape, errNoRelay)
		return
	}
	t, err := h.Store.Task(r.Context(), id)
	if err != nil {
		apierror.Write(w, apierror.OpenAIShape, errNoRelay)
		return
	}
	if !storage.Terminal(t.Status) {
		h.hinted(t)
	}
	writeJSON(w, struct{}{})
}

// relayPending holds the tasks (by store and id) with a relay-hinted read scheduled that has not
// started yet: a hint for such a task is covered by that read.
var relayPending sync.Map

// relayRead holds when the last relay-hinted read of a task (by store and id) started, for one
// refresh interval: a read that failed (a timeout, a 429) stores nothing, so its task's
// RefreshedAt alone would let the next hint read again at once.
var relayRead sync.Map

// hinted reads t from the upstream in the background, as an upstream callback asks, but at most
// once per refresh interval, as client polls are: a relay token needs no API key, so hints must
// not turn into upstream reads made with the operator's credential at the rate they arrive. A
// hint that comes within the interval after t's last read is answered by one read when the
// interval ends; hints that come before that read starts share it.
func (h *Handler) hinted(t storage.Task) {
	key := fmt.Sprintf("%p/%s", h.Store, t.ID)
	if _, scheduled := relayPending.LoadOrStore(key, struct{}{}); scheduled {
		return
	}
	last := time.Unix(0, t.RefreshedAt)
	if at, ok := relayRead.Load(key); ok && at.(time.Time).After(last) {
		last = at.(time.Time)
	}
	wait := h.refreshInterval() - h.now().Sub(last)
	go func() {
		if wait > 0 {
			time.Sleep(wait)
		}
		// Hints from here on may name a state this read misses: they schedule their own.
		relayPending.Delete(key)
		if wait > 0 {
			// The task may have finished meanwhile.
			cur, err := h.Store.Task(context.Background(), t.ID)
			if err != nil || storage.Terminal(cur.Status) {
				return
			}
			t = cur
		}
		started := h.now()
		relayRead.Store(key, started)
		time.AfterFunc(h.refreshInterval(), func() { relayRead.CompareAndDelete(key, started) })
		if _, err := h.refreshOnce(context.Background(), t); err != nil {
			h.Logger.Debug("refresh after an upstream callback", zap.String("task_id", t.ID), zap.Error(err))
		}
	}()
}
