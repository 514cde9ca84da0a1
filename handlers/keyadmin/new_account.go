package keyadmin

import (
	"context"
	"errors"
	"net/http"

	"github.com/mediagw/mediagw/storage"
)

// checkNewAccount refuses (400) a key's or record's account name that is not in Unicode's
// composed form when no account of that name exists yet (storage.CheckNewAccountName): such a
// name could make a new account reading exactly as another. An account that exists under such a
// name (made before the rule: with a key now or before, a record, or a mention in
// disabled_accounts) keeps working.
func (h *Handler) checkNewAccount(ctx context.Context, name string) error {
	refused := storage.CheckNewAccountName(name)
	if refused == nil {
		return nil
	}
	_, err := h.account(ctx, name)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound {
		return fail(http.StatusBadRequest, "account: "+refused.Error())
	}
	return err
}
