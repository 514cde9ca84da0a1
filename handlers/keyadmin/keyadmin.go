// Package keyadmin manages API keys and accounts at run time: the routes that mediagw's admin API
// module mounts under /mediagw/ on Caddy's admin endpoint. Keys are stored hashed and take effect
// at once; the secret of a new key is returned once and never again. Keys from the configuration
// are listed read-only.
package keyadmin

import (
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/callbacks"
	"github.com/mediagw/mediagw/storage"
)

// KeyPrefix starts every generated secret.
const KeyPrefix = "mg-"

const maxBody = 64 << 10

// Handler serves /mediagw/keys… and /mediagw/accounts….
type Handler struct {
	Store storage.Store
	// Static are the configured keys, by id (read-only here).
	Static map[string]storage.APIKey
	// DisabledAccounts are disabled by configuration.
	DisabledAccounts map[string]bool
	Meter            *accounting.Meter
	// WebhookKey is the gateway's webhook key; each account's secret is derived from it.
	WebhookKey []byte
	// Now is the clock that dates new keys (created_at) and credits. Default: time.Now.
	Now func() time.Time
}

// now reads the handler's clock.
func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// Error is an admin API failure with its HTTP status.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

func fail(status int, msg string) *Error { return &Error{Status: status, Message: msg} }

// ServeHTTP routes an admin request. The answer is JSON; failures are {"error": "..."}.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v, err := h.route(r)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = fail(http.StatusInternalServerError, "internal error: "+err.Error())
		}
		writeJSON(w, e.Status, map[string]string{"error": e.Message})
		return
	}
	if page, ok := v.(ledgerCSV); ok {
		writeCSV(w, page)
		return
	}
	if page, ok := v.(listPage); ok {
		if page.next != "" {
			w.Header().Set(ListNextHeader, page.next)
		}
		v = page.items
	}
	status := http.StatusOK
	if _, ok := v.(Created); ok {
		status = http.StatusCreated
	}
	writeJSON(w, status, v)
}

func (h *Handler) route(r *http.Request) (any, error) {
	parts, ok := segments(r.URL)
	switch {
	case !ok:
		return nil, fail(http.StatusBadRequest, "the path is not validly percent-encoded: "+r.URL.EscapedPath())
	case parts[0] == "keys" && len(parts) == 1:
		return methods(r, map[string]func() (any, error){
			http.MethodGet:  func() (any, error) { return h.listKeys(r) },
			http.MethodPost: func() (any, error) { return h.createKey(r) },
		})
	case parts[0] == "keys" && len(parts) == 2:
		return methods(r, map[string]func() (any, error){
			http.MethodGet:    func() (any, error) { return h.showKey(r.Context(), parts[1]) },
			http.MethodPatch:  func() (any, error) { return h.patchKey(r, parts[1]) },
			http.MethodDelete: func() (any, error) { return h.revokeKey(r.Context(), parts[1]) },
		})
	case parts[0] == "keys" && len(parts) == 3 && parts[2] == "usage":
		return methods(r, map[string]func() (any, error){
			http.MethodGet: func() (any, error) { return h.keyUsage(r.Context(), parts[1]) },
		})
	case parts[0] == "accounts" && len(parts) == 1:
		return methods(r, map[string]func() (any, error){
			http.MethodGet: func() (any, error) { return h.listAccounts(r) },
		})
	case parts[0] == "accounts" && len(parts) == 2:
		return methods(r, map[string]func() (any, error){
			http.MethodGet:   func() (any, error) { return h.showAccount(r.Context(), parts[1]) },
			http.MethodPatch: func() (any, error) { return h.patchAccount(r, parts[1]) },
		})
	case parts[0] == "accounts" && len(parts) == 3 && parts[2] == "usage":
		return methods(r, map[string]func() (any, error){
			http.MethodGet: func() (any, error) { return h.accountUsage(r.Context(), parts[1]) },
		})
	case parts[0] == "accounts" && len(parts) == 3 && parts[2] == "credit":
		return methods(r, map[string]func() (any, error){
			http.MethodPost: func() (any, error) { return h.credit(r, parts[1]) },
		})
	case parts[0] == "accounts" && len(parts) == 3 && parts[2] == "balance":
		return methods(r, map[string]func() (any, error){
			http.MethodGet: func() (any, error) { return h.balance(r.Context(), parts[1]) },
		})
	case parts[0] == "accounts" && len(parts) == 3 && parts[2] == "ledger":
		return methods(r, map[string]func() (any, error){
			http.MethodGet: func() (any, error) { return h.ledger(r, parts[1]) },
		})
	}
	return nil, fail(http.StatusNotFound, "no such mediagw admin resource: "+r.URL.Path)
}

// segments splits the path after /mediagw/ as the client wrote it, then decodes each segment, so
// that an account name or key id holding a slash (written %2F, as the CLI and the console write
// it) is one segment. ok is false for a segment that is not validly percent-encoded.
func segments(u *url.URL) (parts []string, ok bool) {
	parts = strings.Split(strings.Trim(strings.TrimPrefix(u.EscapedPath(), "/mediagw/"), "/"), "/")
	for i, p := range parts {
		var err error
		if parts[i], err = url.PathUnescape(p); err != nil {
			return nil, false
		}
	}
	return parts, true
}

func methods(r *http.Request, m map[string]func() (any, error)) (any, error) {
	if f, ok := m[r.Method]; ok {
		return f()
	}
	return nil, fail(http.StatusMethodNotAllowed, "method "+r.Method+" not allowed here")
}

func (h *Handler) listKeys(r *http.Request) (any, error) {
	q, err := pageQuery(r)
	if err != nil {
		return nil, err
	}
	p, err := h.KeysPage(r.Context(), q)
	if err != nil {
		return nil, err
	}
	return listPage{items: p.Keys, next: p.Next}, nil
}

func (h *Handler) createKey(r *http.Request) (Created, error) {
	body, err := readBody(r)
	if err != nil {
		return Created{}, err
	}
	return h.CreateKey(r.Context(), body)
}

// CreateKey creates a key from the fields of spec, a JSON object as the admin API's POST
// /mediagw/keys takes it; the answer holds the secret, the only time it is shown. A new
// account's name must be in NFC (checkNewAccount).
func (h *Handler) CreateKey(ctx context.Context, spec []byte) (Created, error) {
	return h.createKeyIn(ctx, spec, false)
}

// CreateKeyInConfiguredAccount is CreateKey for an account that the Caddyfile names (a console
// member's own): its name is not held to the NFC rule of new names, which the Caddyfile's names
// are not either.
func (h *Handler) CreateKeyInConfiguredAccount(ctx context.Context, spec []byte) (Created, error) {
	return h.createKeyIn(ctx, spec, true)
}

func (h *Handler) createKeyIn(ctx context.Context, spec []byte, configured bool) (Created, error) {
	secret := KeyPrefix + strings.ToLower(rand.Text()+rand.Text()) // 256 random bits
	key := storage.APIKey{Hash: storage.HashSecret(secret), CreatedAt: h.now().UTC().Truncate(time.Second)}
	key.ID = "key_" + key.Hash[:12]
	if err := apply(&key, spec); err != nil {
		return Created{}, fail(http.StatusBadRequest, err.Error())
	}
	if key.Account == "" {
		return Created{}, fail(http.StatusBadRequest, "account is required")
	}
	if !configured {
		if err := h.checkNewAccount(ctx, key.Account); err != nil {
			return Created{}, err
		}
	}
	if _, err := h.Store.CreateKey(ctx, key); errors.Is(err, storage.ErrExists) {
		return Created{}, fail(http.StatusConflict, "a key with this id exists")
	} else if err != nil {
		return Created{}, err
	}
	return Created{KeyView: view(key, false), Key: secret}, nil
}

// key finds a stored or static key by id.
func (h *Handler) key(ctx context.Context, id string) (storage.APIKey, bool, error) {
	if k, ok := h.Static[id]; ok {
		return k, true, nil
	}
	k, err := h.Store.KeyByID(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return k, false, fail(http.StatusNotFound, "no key with id "+id)
	}
	return k, false, err
}

func (h *Handler) showKey(ctx context.Context, id string) (KeyView, error) {
	k, static, err := h.key(ctx, id)
	if err != nil {
		return KeyView{}, err
	}
	return view(k, static), nil
}

func (h *Handler) patchKey(r *http.Request, id string) (KeyView, error) {
	body, err := readBody(r)
	if err != nil {
		return KeyView{}, err
	}
	// Compare-and-set: a patch applies to the version it read, and is applied again to a
	// newer one when another administrator changed the key meanwhile.
	for range maxPatchAttempts {
		k, static, err := h.key(r.Context(), id)
		if err != nil {
			return KeyView{}, err
		}
		if static {
			return KeyView{}, fail(http.StatusConflict, "key "+id+" is configured in the Caddyfile; change it there")
		}
		account := k.Account
		if err := apply(&k, body); err != nil {
			return KeyView{}, fail(http.StatusBadRequest, err.Error())
		}
		if k.Account != account {
			if err := h.checkNewAccount(r.Context(), k.Account); err != nil {
				return KeyView{}, err
			}
		}
		stored, err := h.Store.UpdateKey(r.Context(), k)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if errors.Is(err, storage.ErrNotFound) {
			return KeyView{}, fail(http.StatusNotFound, "no key with id "+id)
		}
		if err != nil {
			return KeyView{}, err
		}
		return view(stored, false), nil
	}
	return KeyView{}, fail(http.StatusConflict, "key "+id+" keeps changing; retry")
}

// maxPatchAttempts bounds the compare-and-set retries of one admin change.
const maxPatchAttempts = 16

func (h *Handler) revokeKey(ctx context.Context, id string) (map[string]string, error) {
	if _, static := h.Static[id]; static {
		return nil, fail(http.StatusConflict, "key "+id+" is configured in the Caddyfile; remove it there")
	}
	err := h.Store.DeleteKey(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fail(http.StatusNotFound, "no key with id "+id)
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"id": id, "status": "revoked"}, nil
}

func (h *Handler) keyUsage(ctx context.Context, id string) (Usage, error) {
	k, _, err := h.key(ctx, id)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Quota: k.Quota}
	if u.Requests, err = h.Meter.Value(ctx, accounting.KeyUsage(id, accounting.UsageRequests)); err != nil {
		return u, err
	}
	if u.Tasks, err = h.Meter.Value(ctx, accounting.KeyUsage(id, accounting.UsageTasks)); err != nil {
		return u, err
	}
	spent, err := h.Meter.Value(ctx, accounting.KeyUsage(id, accounting.UsageSpent))
	if err != nil {
		return u, err
	}
	u.QuotaUsed = billing.Money(spent)
	// Keys without max_active_tasks count through the meter: include what is not flushed yet.
	if u.ActiveTasks, err = h.Meter.Value(ctx, accounting.ActiveCounter(id)); err != nil {
		return u, err
	}
	return u, nil
}

// AccountView is an account as the admin API shows it.
type AccountView struct {
	Name     string `json:"name"`
	Disabled bool   `json:"disabled"`
	// DisabledByConfig accounts are disabled in the Caddyfile and cannot be enabled here.
	DisabledByConfig bool `json:"disabled_by_config,omitempty"`
	// WebhookSecret verifies the callbacks of this account's tasks (Standard Webhooks).
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

func (h *Handler) listAccounts(r *http.Request) (any, error) {
	q, err := pageQuery(r)
	if err != nil {
		return nil, err
	}
	q.Account = ""
	p, err := h.AccountsPage(r.Context(), q)
	if err != nil {
		return nil, err
	}
	return listPage{items: p.Accounts, next: p.Next}, nil
}

func (h *Handler) accountView(a storage.Account, name string) AccountView {
	return AccountView{Name: name, Disabled: a.Disabled || h.DisabledAccounts[name], DisabledByConfig: h.DisabledAccounts[name]}
}

func (h *Handler) showAccount(ctx context.Context, name string) (AccountView, error) {
	a, err := h.account(ctx, name)
	if err != nil {
		return AccountView{}, err
	}
	v := h.accountView(a, name)
	if len(h.WebhookKey) > 0 {
		v.WebhookSecret = callbacks.AccountSecret(h.WebhookKey, name)
	}
	return v, nil
}

func (h *Handler) patchAccount(r *http.Request, name string) (AccountView, error) {
	body, err := readBody(r)
	if err != nil {
		return AccountView{}, err
	}
	const usage = `the body must be {"disabled": true|false}`
	m, err := strictObject(body, "the body", "disabled")
	if err != nil {
		return AccountView{}, fail(http.StatusBadRequest, err.Error()+" ("+usage+")")
	}
	var disabled *bool
	if json.Unmarshal(m["disabled"], &disabled) != nil || disabled == nil {
		return AccountView{}, fail(http.StatusBadRequest, usage)
	}
	return h.SetAccountDisabled(r.Context(), name, *disabled)
}

// SetAccountDisabled disables or enables an account (compare-and-set on its record) and returns
// it as GET /mediagw/accounts/{name} shows it. The record of an account that has none yet is
// made only for a name a key could have (storage.CheckAccountName) that is an account already or
// may be a new one's (checkNewAccount); any other is a 400.
func (h *Handler) SetAccountDisabled(ctx context.Context, name string, disabled bool) (AccountView, error) {
	for attempt := 0; ; attempt++ {
		cur, err := h.Store.Account(ctx, name)
		if errors.Is(err, storage.ErrNotFound) {
			if err := storage.CheckAccountName(name); err != nil {
				return AccountView{}, fail(http.StatusBadRequest, "account: "+err.Error())
			}
			if err := h.checkNewAccount(ctx, name); err != nil {
				return AccountView{}, err
			}
		} else if err != nil {
			return AccountView{}, err
		}
		cur.Name, cur.Disabled = name, disabled
		_, err = h.Store.SaveAccount(ctx, cur)
		if err == nil {
			break
		}
		if !errors.Is(err, storage.ErrConflict) || attempt >= maxPatchAttempts {
			return AccountView{}, err
		}
	}
	return h.showAccount(ctx, name)
}

// account returns the record of an account that exists: one that the account list shows, that
// is with a record (it was disabled or enabled here), a key now or before, or a mention in
// disabled_accounts. An account whose last key was revoked or moved keeps its balance, usage and
// ledger, and stays reachable. Any other name is a 404, so that a typo is not answered with a
// webhook secret for an account no key can use.
func (h *Handler) account(ctx context.Context, name string) (storage.Account, error) {
	a, err := h.Store.Account(ctx, name)
	if err == nil || !errors.Is(err, storage.ErrNotFound) {
		return a, err
	}
	if h.DisabledAccounts[name] {
		return storage.Account{Name: name}, nil
	}
	// The page that ends before the least name above name (name and a NUL, which no account
	// name holds) ends with name itself when the list has it.
	page, err := h.AccountsPage(ctx, storage.DirectoryPage{Before: name + "\x00", Limit: 1})
	if err != nil {
		return a, err
	}
	if len(page.Accounts) == 1 && page.Accounts[0].Name == name {
		return storage.Account{Name: name}, nil
	}
	return a, fail(http.StatusNotFound, "no account named "+name+" (an account exists once it has had a key)")
}

func (h *Handler) accountUsage(ctx context.Context, name string) (AccountUsage, error) {
	if _, err := h.account(ctx, name); err != nil {
		return AccountUsage{}, err
	}
	return h.UsageOf(ctx, name)
}

// UsageOf is what all keys of an account have used, for an account known to exist (a name that
// AccountsPage listed): unlike AccountUsage it does not look the account up first.
func (h *Handler) UsageOf(ctx context.Context, name string) (AccountUsage, error) {
	var u AccountUsage
	var err error
	if u.Requests, err = h.Meter.Value(ctx, accounting.AccountUsage(name, accounting.UsageRequests)); err != nil {
		return u, err
	}
	if u.Tasks, err = h.Meter.Value(ctx, accounting.AccountUsage(name, accounting.UsageTasks)); err != nil {
		return u, err
	}
	spent, err := h.Meter.Value(ctx, accounting.AccountUsage(name, accounting.UsageSpent))
	u.QuotaUsed = billing.Money(spent)
	return u, err
}

func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fail(http.StatusBadRequest, "the body could not be read")
	}
	if len(body) > maxBody {
		return nil, fail(http.StatusRequestEntityTooLarge, "the body is too large")
	}
	return body, nil
}

// writeCSV writes a ledger page as CSV, the cursor of the next page in NextHeader.
func writeCSV(w http.ResponseWriter, page ledgerCSV) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	if page.Next != "" {
		w.Header().Set(NextHeader, page.Next)
	}
	w.WriteHeader(http.StatusOK)
	// The status is sent; a failed write means the client is gone.
	_ = csv.NewWriter(w).WriteAll(page.rows())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	// The status is sent; a failed write means the client is gone.
	_ = apierror.WriteJSON(w, status, v)
}
