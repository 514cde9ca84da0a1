package keyadmin

import (
	"context"
	"slices"
	"sync"
)

// keyListMemoKey is the context key of a keyListMemo.
type keyListMemoKey struct{}

// keyListMemo holds the key list of one request once it is read.
type keyListMemo struct {
	once sync.Once
	keys []KeyView
	err  error
}

// WithKeyListMemo returns a context in which this package reads the key list from the store at
// most once, however many operations list keys or look an account up (an account without a
// record of its own exists by its keys). Use it for one read-only request, such as a console
// page: a key created or revoked after the first read is not seen in that context.
func WithKeyListMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, keyListMemoKey{}, &keyListMemo{})
}

func (m *keyListMemo) list(ctx context.Context, h *Handler) ([]KeyView, error) {
	m.once.Do(func() { m.keys, m.err = h.readKeys(ctx) })
	return slices.Clone(m.keys), m.err
}
