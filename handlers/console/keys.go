package console

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/keyadmin"
	"github.com/mediagw/mediagw/storage"
)

// MemberKeys are the limits of the keys that members create in their account. Members cannot
// raise them: every key they create carries them, whatever the form says.
type MemberKeys struct {
	// Max is the most keys created through the admin API or the console (configured keys do
	// not count) that the account may hold for a member to create another.
	Max int
	// Budget, when set, is each key's budget: the money it may spend per UTC day or month, or
	// for all time, as a sub-limit of the account's balance.
	Budget *keyadmin.Budget
	// Quota is the older form of a budget (Quota whole units for all time); a key gets Budget
	// or Quota, not both. MaxActiveTasks bounds each key's unfinished tasks. Nil: no limit.
	Quota, MaxActiveTasks *int64
	// CreatesPerHour bounds the keys the members of one account create in any hour, on every
	// instance (a sliding window in the store), so that a member cannot churn keys by revoking
	// and creating them. 0: no bound here; the mediagw_console module sets 10 when the
	// Caddyfile gives none.
	CreatesPerHour int
}

// keyCreateWindow is the store's rate window of the keys members of account create.
func keyCreateWindow(account string) string { return "console/keys/created/" + account }

type keysData struct {
	Keys    []keyadmin.KeyView
	Account string
	Created *keyadmin.Created
	// CanCreate is false for a member when the operator lets members create no keys.
	CanCreate bool
	// KeyToken is the create form's one-time token as this render made it (key_form.go).
	KeyToken string
	Pages    pager
}

// keys lists a page of keys: a member's account's, an operator's of the account the query
// names or of every account. The page reads the account's own index, never other accounts' keys.
func (h *Handler) keys(w http.ResponseWriter, r *http.Request, s *session) {
	q := listQuery(r)
	q.Account = r.URL.Query().Get("account")
	if !s.user.Operator() {
		q.Account = s.user.Account
	}
	p, err := h.Keys.KeysPage(r.Context(), q)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	fixed := url.Values{}
	if s.user.Operator() {
		fixed.Set("account", q.Account)
	}
	h.show(w, s, "keys", "API keys", keysData{Keys: p.Keys, Account: q.Account, CanCreate: h.mayCreateKeys(s), KeyToken: newKeyFormToken(),
		Pages: makePager("/keys", fixed, q, p.Prev, p.Next)})
}

func (h *Handler) mayCreateKeys(s *session) bool { return s.user.Operator() || h.MemberKeys != nil }

// createKey creates a key from the form: account (an operator's choice; a member's own),
// models (patterns separated by commas or any white space, tabs and line breaks too; empty:
// all), expires (a day, YYYY-MM-DD, from whose start in UTC the key is refused; empty: never)
// and the form's one-time token: a form sent again creates no second key (claimKeyForm). A
// member's key carries the limits of MemberKeys. The secret is shown on the answer page only.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, s *session) {
	if !h.mayCreateKeys(s) {
		h.fail(w, r, s, http.StatusForbidden, "Your operator has not allowed members to create keys.")
		return
	}
	claim, ok := h.claimKeyForm(w, r, s)
	if !ok {
		return
	}
	made := "" // the id of the key created, kept under the form's token
	defer func() { claim.done(r, made) }()
	spec := map[string]any{"account": strings.TrimSpace(r.PostFormValue("account"))}
	if models := strings.FieldsFunc(r.PostFormValue("models"), func(c rune) bool { return c == ',' || unicode.IsSpace(c) }); len(models) > 0 {
		spec["models"] = models
	}
	if day := strings.TrimSpace(r.PostFormValue("expires")); day != "" {
		t, err := time.Parse(time.DateOnly, day)
		if err != nil {
			h.fail(w, r, s, http.StatusBadRequest, "Expires must be a day written as YYYY-MM-DD, or empty.")
			return
		}
		spec["expires"] = t.UTC().Format(time.RFC3339)
	}
	if !s.user.Operator() {
		spec["account"] = s.user.Account
		if h.MemberKeys.Budget != nil {
			spec["budget"] = *h.MemberKeys.Budget
		} else if h.MemberKeys.Quota != nil {
			spec["quota"] = *h.MemberKeys.Quota
		}
		if h.MemberKeys.MaxActiveTasks != nil {
			spec["max_active_tasks"] = *h.MemberKeys.MaxActiveTasks
		}
		if msg := boundByLoginKey(spec, s.user.Key); msg != "" {
			h.fail(w, r, s, http.StatusForbidden, msg)
			return
		}
		release, ok := h.holdAccountKeys(w, r, s)
		if !ok {
			return
		}
		defer release()
	}
	body, err := json.Marshal(spec)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	create := h.Keys.CreateKey // an operator's account may be a new one, held to the rule of new names
	if !s.user.Operator() {
		// A member's own account: the Caddyfile's, or their login key's, which exists already.
		create = h.Keys.CreateKeyInConfiguredAccount
	}
	created, err := create(r.Context(), body)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	made = created.ID
	h.audit(s, "create key", created.ID+" of "+created.Account+limitsNote(created.KeyView))
	q := storage.DirectoryPage{Account: created.Account, Limit: listPageSize}
	keys, err := h.Keys.KeysPage(r.Context(), q)
	if err != nil {
		h.failErr(w, r, s, err)
		return
	}
	h.render(w, http.StatusCreated, "keys", page{Title: "API keys", User: s.user, CSRF: s.csrf(),
		Notice: "Key " + created.ID + " was created. Copy its secret now: it is not shown again.",
		Data: keysData{Keys: keys.Keys, Account: created.Account, Created: &created, CanCreate: true, KeyToken: newKeyFormToken(),
			Pages: makePager("/keys", url.Values{"account": {created.Account}}, q, keys.Prev, keys.Next)}})
}

// boundByLoginKey keeps a key that a member who logged in with key creates within that key: its
// models (when the key is restricted to some; an empty list takes the key's own), its allow_ips,
// at the latest its expiry, and its budget, rate and max_active_tasks (boundLimitsByLoginKey).
// Otherwise a key that may use one model, or one address, or spend 0.5 a day, could make itself
// a key without those bounds and reach, through the gateway's API, the account's tasks of every
// model, or spend what the account holds. It returns why the spec is refused ("" when it is not). key is nil for a
// configured member, whom nothing bounds here.
func boundByLoginKey(spec map[string]any, key *keyadmin.KeyView) string {
	if key == nil {
		return ""
	}
	if len(key.Models) > 0 {
		asked, _ := spec["models"].([]string)
		if len(asked) == 0 {
			asked = key.Models
		}
		if !modelsWithin(asked, key) {
			return "A key you create may use only the models of the key you logged in with: " + strings.Join(key.Models, " ") + "."
		}
		spec["models"] = asked
	}
	if len(key.AllowIPs) > 0 {
		spec["allow_ips"] = key.AllowIPs
	}
	if key.Expires != nil {
		asked, _ := spec["expires"].(string)
		if at, err := time.Parse(time.RFC3339, asked); err != nil || at.After(*key.Expires) {
			spec["expires"] = key.Expires.UTC().Format(time.RFC3339)
		}
	}
	return boundLimitsByLoginKey(spec, key)
}

// modelsWithin reports whether a key of models (empty: every model) may use only models that
// the login key may use: each is one of its patterns, or a model (no wildcard) one of them
// allows. Any list is within a login key that may use every model.
func modelsWithin(models []string, key *keyadmin.KeyView) bool {
	if len(key.Models) == 0 {
		return true
	}
	if len(models) == 0 {
		return false
	}
	id := auth.Identity{Models: key.Models}
	for _, m := range models {
		if !slices.Contains(key.Models, m) && (strings.ContainsAny(m, "*?") || !id.AllowsModel(m)) {
			return false
		}
	}
	return true
}

// holdAccountKeys takes the member's account's key lease, so that no other create (on any
// instance, of this session or another) counts the keys between this count and this create, and
// checks that the account holds fewer than MemberKeys.Max keys. The lease's owner is this
// request alone (a random token): a session's second create, sent at once, must not find the
// lease its first holds already its own. It answers the request itself when it returns false.
func (h *Handler) holdAccountKeys(w http.ResponseWriter, r *http.Request, s *session) (release func(), ok bool) {
	name, owner := "console/keys/"+s.user.Account, "create/"+rand.Text()
	held, err := h.Store.AcquireLease(r.Context(), name, owner, h.now(), 30*time.Second)
	if err != nil {
		h.failErr(w, r, s, err)
		return nil, false
	}
	if !held {
		h.fail(w, r, s, http.StatusConflict, "Another key of this account is being created. Try again.")
		return nil, false
	}
	release = func() {
		// Released even when the client has gone: else the account's creates wait out the lease.
		ctx, cancel := afterRequest(r)
		defer cancel()
		if err := h.Store.ReleaseLease(ctx, name, owner); err != nil {
			h.Logger.Warn("releasing a console key lease (it ends by itself in 30s)", zap.Error(err))
		}
	}
	stored, err := h.storedKeys(r, s.user.Account, h.MemberKeys.Max)
	if err != nil {
		release()
		h.failErr(w, r, s, err)
		return nil, false
	}
	if stored >= h.MemberKeys.Max {
		release()
		h.fail(w, r, s, http.StatusConflict, "This account holds "+strconv.Itoa(stored)+" keys, the most its members may hold. Revoke one before creating another.")
		return nil, false
	}
	if n := h.MemberKeys.CreatesPerHour; n > 0 {
		ok, retry, err := h.Store.AllowRate(r.Context(), keyCreateWindow(s.user.Account), n, time.Hour, h.now())
		if err != nil {
			release()
			h.failErr(w, r, s, err)
			return nil, false
		}
		if !ok {
			release()
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
			h.fail(w, r, s, http.StatusTooManyRequests, "This account's members have created "+strconv.Itoa(n)+" keys in the last hour, the most they may. Try again later.")
			return nil, false
		}
	}
	return release, true
}

// limitsNote writes a new key's limits for the audit log ("" for none).
func limitsNote(k keyadmin.KeyView) string {
	var parts []string
	if k.Budget != nil {
		b := "budget " + k.Budget.Amount.String()
		if k.Budget.Period != "" {
			b += "/" + k.Budget.Period
		}
		parts = append(parts, b)
	}
	if k.Quota != nil {
		parts = append(parts, "quota "+strconv.FormatInt(*k.Quota, 10))
	}
	if k.MaxActiveTasks != nil {
		parts = append(parts, "max_active_tasks "+strconv.FormatInt(*k.MaxActiveTasks, 10))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// accountKeys reads every key of account through its own index, a page at a time: the keys of
// no other account are read.
func (h *Handler) accountKeys(r *http.Request, account string) ([]keyadmin.KeyView, error) {
	var all []keyadmin.KeyView
	q := storage.DirectoryPage{Account: account, Limit: storage.MaxDirectoryPage}
	for {
		p, err := h.Keys.KeysPage(r.Context(), q)
		if err != nil {
			return nil, err
		}
		all = append(all, p.Keys...)
		if p.Next == "" {
			return all, nil
		}
		q.After = p.Next
	}
}

// storedKeys counts the keys of account that the admin API or the console created (not the
// configured ones), up to max: it reads pages of max keys of the account until it has counted
// max or read them all.
func (h *Handler) storedKeys(r *http.Request, account string, max int) (int, error) {
	q := storage.DirectoryPage{Account: account, Limit: max}
	n := 0
	for n < max {
		p, err := h.Keys.KeysPage(r.Context(), q)
		if err != nil {
			return 0, err
		}
		for _, k := range p.Keys {
			if !k.ReadOnly {
				n++
			}
		}
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	return n, nil
}

// MayRevoke reports whether the user may revoke key k: a key of an account they see that is not
// configured in the Caddyfile (ReadOnly: it changes only with the configuration), within the
// models of the key they logged in with (see mayRevokeModels). The keys table shows a Revoke
// button only where it holds; revokeKey refuses the rest by the same rules.
func (u User) MayRevoke(k keyadmin.KeyView) bool {
	return !k.ReadOnly && (u.Operator() || u.Account == k.Account) && u.mayRevokeModels(k)
}

// mayRevokeModels reports whether the key the user logged in with (if any) allows them to revoke
// k: a key restricted to some models cannot take away a key that may use others.
func (u User) mayRevokeModels(k keyadmin.KeyView) bool {
	return u.Key == nil || modelsWithin(k.Models, u.Key)
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, s *session, id string) {
	k, err := h.Keys.Key(r.Context(), id)
	if err != nil || !s.sees(k.Account) {
		h.notFound(w, r, s) // another account's key is answered as an unknown one
		return
	}
	if !s.user.mayRevokeModels(k) {
		h.fail(w, r, s, http.StatusForbidden, "The key you logged in with may revoke only keys of its own models: "+strings.Join(s.user.Key.Models, " ")+".")
		return
	}
	if err := h.Keys.RevokeKey(r.Context(), id); err != nil {
		h.failErr(w, r, s, err)
		return
	}
	h.audit(s, "revoke key", id+" of "+k.Account)
	http.Redirect(w, r, "/keys?account="+url.QueryEscape(k.Account), http.StatusSeeOther)
}
