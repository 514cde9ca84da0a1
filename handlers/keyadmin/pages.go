package keyadmin

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/storage"
)

// The key and account lists are paged, here and in the admin API:
//
//	GET /mediagw/keys?account=&after=&before=&limit=
//	GET /mediagw/accounts?after=&before=&limit=
//
// A page holds at most limit items (DefaultListPage when absent, at most
// storage.MaxDirectoryPage) in ascending order of id or name, after the cursor after or before
// the cursor before; the answer is the JSON array of the page, with the cursor of the page after
// it in the ListNextHeader header, absent on the last page.

// DefaultListPage is the size of a key or account page when the request names none.
const DefaultListPage = 100

// ListNextHeader carries the cursor of the next page of a key or account list (its after).
const ListNextHeader = "Mediagw-Next"

// KeyPage is a page of keys: Next is the after of the page that follows, Prev the before of the
// page that precedes it ("" at either end, as far as the page knows).
type KeyPage struct {
	Keys       []KeyView
	Next, Prev string
}

// AccountPage is a page of accounts, with its cursors as in KeyPage.
type AccountPage struct {
	Accounts   []AccountView
	Next, Prev string
}

// KeysPage lists a page of keys, the stored ones of q (read through the store's index, of one
// account when q.Account is set) and the configured ones, marked ReadOnly, in order of id.
func (h *Handler) KeysPage(ctx context.Context, q storage.DirectoryPage) (KeyPage, error) {
	stored, more, err := h.Store.KeysPage(ctx, q)
	if err != nil {
		return KeyPage{}, err
	}
	list := make([]KeyView, 0, len(stored)+len(h.Static))
	for _, k := range stored {
		list = append(list, view(k, false))
	}
	for _, k := range h.Static {
		if (q.Account == "" || k.Account == q.Account) && inPage(k.ID, q) {
			list = append(list, view(k, true))
		}
	}
	p := KeyPage{}
	p.Keys, p.Prev, p.Next = finish(list, q, more, func(k KeyView) string { return k.ID })
	return p, nil
}

// AccountsPage lists a page of accounts in order of name: those with a record or a key in the
// store, with a configured key, or disabled by configuration.
func (h *Handler) AccountsPage(ctx context.Context, q storage.DirectoryPage) (AccountPage, error) {
	stored, more, err := h.Store.AccountsPage(ctx, q)
	if err != nil {
		return AccountPage{}, err
	}
	seen := map[string]bool{}
	list := make([]AccountView, 0, len(stored))
	add := func(a storage.Account) {
		if !seen[a.Name] {
			seen[a.Name] = true
			list = append(list, h.accountView(a, a.Name))
		}
	}
	for _, a := range stored {
		add(a)
	}
	for _, k := range h.Static {
		if inPage(k.Account, q) {
			add(storage.Account{Name: k.Account})
		}
	}
	for name := range h.DisabledAccounts {
		if inPage(name, q) {
			add(storage.Account{Name: name})
		}
	}
	p := AccountPage{}
	p.Accounts, p.Prev, p.Next = finish(list, q, more, func(a AccountView) string { return a.Name })
	return p, nil
}

// inPage reports whether name lies past q's cursor.
func inPage(name string, q storage.DirectoryPage) bool {
	return (q.After == "" || name > q.After) && (q.Before == "" || name < q.Before)
}

// finish sorts a page's items by name (the store's and the configured ones, merged), keeps the
// q.Limit nearest q's cursor (the last ones when reading backwards), and returns them with the
// page's cursors; more says whether the store has more beyond its part.
func finish[T any](list []T, q storage.DirectoryPage, more bool, name func(T) string) (page []T, prev, next string) {
	slices.SortFunc(list, func(a, b T) int { return strings.Compare(name(a), name(b)) })
	limit := min(max(q.Limit, 1), storage.MaxDirectoryPage)
	switch {
	case len(list) <= limit:
	case q.Before != "":
		list, more = list[len(list)-limit:], true
	default:
		list, more = list[:limit], true
	}
	if len(list) == 0 {
		return list, "", ""
	}
	first, last := name(list[0]), name(list[len(list)-1])
	if q.Before != "" {
		if more {
			prev = first
		}
		return list, prev, last
	}
	if q.After != "" {
		prev = first
	}
	if more {
		next = last
	}
	return list, prev, next
}

// pageQuery reads the paging parameters of a list request.
func pageQuery(r *http.Request) (storage.DirectoryPage, error) {
	v, err := strictQuery(r, "after", "before", "account", "limit")
	if err != nil {
		return storage.DirectoryPage{}, err
	}
	q := storage.DirectoryPage{After: v.Get("after"), Before: v.Get("before"), Account: v.Get("account"), Limit: DefaultListPage}
	if q.After != "" && q.Before != "" {
		return q, fail(http.StatusBadRequest, "after and before cannot both be given")
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > storage.MaxDirectoryPage {
			return q, fail(http.StatusBadRequest, "limit must be a whole number from 1 to "+strconv.Itoa(storage.MaxDirectoryPage))
		}
		q.Limit = n
	}
	return q, nil
}

// listPage is a page of the admin API's key or account list: the JSON array, with the cursor of
// the next page in ListNextHeader.
type listPage struct {
	items any
	next  string
}
