package console

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

// The key form's one-time token: each render of the keys page gives its create form a new
// random token (as the credit form gets an idempotency key), and the store keeps, under it, the
// id of the key the form created. A form sent twice (a double click, or the browser's "resubmit
// the form?" on a reload of the page that showed the secret) so creates one key: the second
// answer names the key the first created and shows no secret (the console keeps none).
const (
	keyFormField = "key_token"
	// keyFormKept is how long a token's key id is kept: longer than any session.
	keyFormKept = 24 * time.Hour
	// keyFormRunning bounds a create's hold on its token, should its instance die mid-create.
	keyFormRunning = time.Minute
)

// newKeyFormToken makes a key form's token.
func newKeyFormToken() string { return "console-key-" + rand.Text() }

// keyFormRecord names a token's record in the store's idempotency records: the token as the
// session's user, of the session's account, sent it. The same token sent from another session
// (another user or account) is another record, so it is never told the key this one made.
func keyFormRecord(s *session, token string) string {
	return "console/keyform/" + url.PathEscape(s.user.Account) + "/" + url.PathEscape(s.user.Name) + "/" + token
}

// recordTimeout bounds the store writes that end a create after its answer is decided.
const recordTimeout = 10 * time.Second

// afterRequest is a context for a store write that must be done even when r's client has gone
// (its context cancelled): r's values, without its cancellation, bounded by recordTimeout.
func afterRequest(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), recordTimeout)
}

// keyFormClaim is a create's hold on its form's token: done records the key it created (or,
// with "", frees the token for the form to be sent again, after a refusal).
type keyFormClaim struct {
	h            *Handler
	record, self string
}

// claimKeyForm takes the form's token for this request. It answers the request itself when it
// returns false: the form has no token, or it was sent before (its key is named), or it is being
// sent now.
func (h *Handler) claimKeyForm(w http.ResponseWriter, r *http.Request, s *session) (keyFormClaim, bool) {
	token := r.PostFormValue(keyFormField)
	if !strings.HasPrefix(token, "console-key-") || len(token) > 64 {
		h.fail(w, r, s, http.StatusBadRequest, "This key form has no create token. Reload the keys page and try again.")
		return keyFormClaim{}, false
	}
	c := keyFormClaim{h: h, record: keyFormRecord(s, token), self: rand.Text()}
	got, claimed, err := h.Store.BeginIdempotent(r.Context(), c.record,
		storage.IdempotencyRecord{Owner: c.self, InFlight: true}, keyFormRunning)
	switch {
	case err != nil:
		h.failErr(w, r, s, err)
		return keyFormClaim{}, false
	case claimed:
		return c, true
	case got.InFlight:
		h.fail(w, r, s, http.StatusConflict, "This form is being sent already. Open the keys page in a moment to see its key.")
		return keyFormClaim{}, false
	}
	h.fail(w, r, s, http.StatusConflict, "This form was sent before and created key "+string(got.Body)+
		": its secret was shown once, on that answer, and is not shown again. Reload the keys page for a new form.")
	return keyFormClaim{}, false
}

// done records that the form created key id, or frees its token when id is "" (nothing was
// created: the form may be sent again). It records even when the client has gone meanwhile
// (a second click aborts the first navigation), else the form sent again would be told it is
// being sent for keyFormRunning, and then create a second key.
func (c keyFormClaim) done(r *http.Request, id string) {
	ctx, cancel := afterRequest(r)
	defer cancel()
	var err error
	if id == "" {
		err = c.h.Store.AbandonIdempotent(ctx, c.record, c.self)
	} else {
		err = c.h.Store.CompleteIdempotent(ctx, c.record,
			storage.IdempotencyRecord{Owner: c.self, Status: http.StatusCreated, Body: []byte(id)}, keyFormKept)
	}
	if err != nil && !errors.Is(err, storage.ErrConflict) {
		// The token's in-flight hold ends by itself (keyFormRunning): then the form could create
		// a second key, which is what it could do before tokens.
		c.h.Logger.Warn("recording a console key form's token", zap.Error(err))
	}
}
