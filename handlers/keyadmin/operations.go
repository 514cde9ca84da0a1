package keyadmin

import "context"

// The operations below are the admin API's own, for the other front ends that change the same
// state (the console). Each failure is an *Error carrying the status the admin API answers.

// Key shows one key, or a 404 *Error.
func (h *Handler) Key(ctx context.Context, id string) (KeyView, error) { return h.showKey(ctx, id) }

// KeyWithHash shows one key with the stored hash of its secret (storage.HashSecret), or a 404
// *Error. The hash tells a secret from another under the same id: a configured key whose secret
// was replaced keeps its id. It is for checks inside the gateway; never show or log it.
func (h *Handler) KeyWithHash(ctx context.Context, id string) (KeyView, string, error) {
	k, static, err := h.key(ctx, id)
	if err != nil {
		return KeyView{}, "", err
	}
	return view(k, static), k.Hash, nil
}

// RevokeKey deletes a stored key; a configured key is a 409 *Error.
func (h *Handler) RevokeKey(ctx context.Context, id string) error {
	_, err := h.revokeKey(ctx, id)
	return err
}

// KeyUsage is what a key has used.
func (h *Handler) KeyUsage(ctx context.Context, id string) (Usage, error) { return h.keyUsage(ctx, id) }

// Account shows an account that exists (with its webhook secret), or a 404 *Error.
func (h *Handler) Account(ctx context.Context, name string) (AccountView, error) {
	return h.showAccount(ctx, name)
}

// AccountUsage is what all keys of an account have used.
func (h *Handler) AccountUsage(ctx context.Context, name string) (AccountUsage, error) {
	return h.accountUsage(ctx, name)
}

// Balance shows an account's balance, what is held, and whether it is limited.
func (h *Handler) Balance(ctx context.Context, name string) (BalanceView, error) {
	return h.balance(ctx, name)
}
