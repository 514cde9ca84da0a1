package keyadmin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/storage"
)

// KeyView is a key as the admin API shows it: never the secret, never its hash. A limit that is
// not set (no quota, no budget, no rate, no active-task bound, no expiry) is null.
type KeyView struct {
	ID             string     `json:"id"`
	Account        string     `json:"account"`
	Models         []string   `json:"models"`
	AllowIPs       []string   `json:"allow_ips"`
	Disabled       bool       `json:"disabled"`
	Expires        *time.Time `json:"expires"`
	CreatedAt      *time.Time `json:"created_at,omitempty"`
	Quota          *int64     `json:"quota"`
	Budget         *Budget    `json:"budget"`
	Rate           *Rate      `json:"rate"`
	MaxActiveTasks *int64     `json:"max_active_tasks"`
	// ReadOnly keys come from the configuration and change only with it.
	ReadOnly bool `json:"read_only"`
}

// Rate is a request rate limit: Requests per Window (a duration such as "1m", shown in its
// shortest form: "1m", not "1m0s").
type Rate struct {
	Requests int    `json:"requests"`
	Window   string `json:"window"`
}

// Budget is what a key may spend, in the gateway's currency, as a sub-limit of its account's
// balance: Amount (a decimal string, above 0) per UTC calendar "day" or "month", or for all time
// when Period is empty.
type Budget struct {
	Amount billing.Money `json:"amount"`
	Period string        `json:"period,omitempty"`
}

// Created is the answer to a key creation: the only time the secret is shown.
type Created struct {
	KeyView
	Key string `json:"key"`
}

// Usage is what a key has used: its quota is null when it has none, and active_tasks counts its
// unfinished video tasks whether or not it has a limit.
type Usage struct {
	Requests int64 `json:"requests"`
	Tasks    int64 `json:"tasks"`
	// QuotaUsed is the money the key has been charged (its settlements), a decimal string in
	// the gateway's currency: a quota is a budget of that many units. Metered: it may trail
	// the ledger by a couple of seconds.
	QuotaUsed   billing.Money `json:"quota_used"`
	Quota       *int64        `json:"quota"`
	ActiveTasks int64         `json:"active_tasks"`
}

// AccountUsage is what all keys of an account have used; QuotaUsed is the money charged.
type AccountUsage struct {
	Requests  int64         `json:"requests"`
	Tasks     int64         `json:"tasks"`
	QuotaUsed billing.Money `json:"quota_used"`
}

func view(k storage.APIKey, readOnly bool) KeyView {
	v := KeyView{ID: k.ID, Account: k.Account, Models: k.Models, AllowIPs: []string{}, Disabled: k.Disabled,
		Quota: k.Quota, ReadOnly: readOnly}
	if k.MaxActiveTasks > 0 {
		n := k.MaxActiveTasks
		v.MaxActiveTasks = &n
	}
	if v.Models == nil {
		v.Models = []string{}
	}
	for _, p := range k.AllowIPs {
		v.AllowIPs = append(v.AllowIPs, p.String())
	}
	if !k.ExpiresAt.IsZero() {
		t := k.ExpiresAt
		v.Expires = &t
	}
	if !k.CreatedAt.IsZero() {
		t := k.CreatedAt
		v.CreatedAt = &t
	}
	if k.RateRequests > 0 {
		v.Rate = &Rate{Requests: k.RateRequests, Window: apierror.FormatDuration(k.RateWindow)}
	}
	if k.Budget.Limit > 0 {
		v.Budget = &Budget{Amount: billing.Money(k.Budget.Limit), Period: k.Budget.Period}
	}
	return v
}

// MaxModelPattern is the longest model pattern of a key, in bytes: the longest model the
// gateway reads from a request (its model field's bound).
const MaxModelPattern = 512

// keyFields are the settable fields of a key, in a create or patch body. A field that is absent
// is left alone; null clears it.
var keyFields = map[string]func(k *storage.APIKey, raw json.RawMessage) error{
	"account": func(k *storage.APIKey, raw json.RawMessage) error {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return fmt.Errorf("account must be a string")
		}
		if err := storage.CheckAccountName(s); err != nil {
			return fmt.Errorf("account: %w", err)
		}
		k.Account = s
		return nil
	},
	"models": func(k *storage.APIKey, raw json.RawMessage) error {
		var m []string
		if json.Unmarshal(raw, &m) != nil {
			return fmt.Errorf("models must be an array of glob patterns")
		}
		for _, pattern := range m {
			if len(pattern) > MaxModelPattern {
				return fmt.Errorf("models: a pattern is at most %d bytes (no model the gateway accepts is longer)", MaxModelPattern)
			}
		}
		k.Models = m
		return nil
	},
	"allow_ips": func(k *storage.APIKey, raw json.RawMessage) error {
		var list []string
		if json.Unmarshal(raw, &list) != nil {
			return fmt.Errorf("allow_ips must be an array of addresses or CIDR ranges")
		}
		k.AllowIPs = nil
		for _, s := range list {
			p, err := auth.ParseIPRange(s)
			if err != nil {
				return err
			}
			k.AllowIPs = append(k.AllowIPs, p)
		}
		return nil
	},
	"expires": func(k *storage.APIKey, raw json.RawMessage) error {
		var s *string
		if json.Unmarshal(raw, &s) != nil {
			return fmt.Errorf("expires must be an RFC 3339 time or null")
		}
		k.ExpiresAt = time.Time{}
		if s != nil {
			t, err := storage.ParseKeyExpiry(*s)
			if err != nil {
				return err
			}
			k.ExpiresAt = t
		}
		return nil
	},
	"disabled": func(k *storage.APIKey, raw json.RawMessage) error {
		if json.Unmarshal(raw, &k.Disabled) != nil {
			return fmt.Errorf("disabled must be true or false")
		}
		return nil
	},
	"quota": func(k *storage.APIKey, raw json.RawMessage) error {
		var q *int64
		if json.Unmarshal(raw, &q) != nil || (q != nil && *q < 0) {
			return fmt.Errorf("quota must be a whole number, 0 or more, or null for unlimited")
		}
		k.Quota = q
		return nil
	},
	"budget": func(k *storage.APIKey, raw json.RawMessage) error {
		const usage = `budget must be {"amount": "25.50", "period": "day" or "month" (or left out for all time)} with an amount above 0, or null for none`
		if isNull(raw) {
			k.Budget = storage.Budget{}
			return nil
		}
		m, err := strictObject(raw, "budget", "amount", "period")
		if err != nil {
			return fmt.Errorf("%w (%s)", err, usage)
		}
		b := &Budget{}
		// An amount as entered (billing.EnteredMoney: "+5" is refused, as in a credit), and a
		// decimal string, as a credit's: a JSON number would be read by a client's decoder as a
		// float before it came here.
		var amount billing.EnteredMoney
		if !bytes.HasPrefix(bytes.TrimSpace(m["amount"]), []byte(`"`)) || json.Unmarshal(m["amount"], &amount) != nil || m["period"] != nil && json.Unmarshal(m["period"], &b.Period) != nil {
			return errors.New(usage)
		}
		b.Amount = billing.Money(amount)
		if b.Amount <= 0 || int64(b.Amount) > storage.MaxAmount ||
			b.Period != storage.BudgetTotal && b.Period != storage.BudgetDay && b.Period != storage.BudgetMonth {
			return errors.New(usage)
		}
		k.Budget = storage.Budget{Limit: int64(b.Amount), Period: b.Period}
		return nil
	},
	"rate": func(k *storage.APIKey, raw json.RawMessage) error {
		const usage = `rate must be {"requests": N, "window": "1m"} or null`
		var r *Rate
		if !isNull(raw) {
			m, err := strictObject(raw, "rate", "requests", "window")
			if err != nil {
				return fmt.Errorf("%w (%s)", err, usage)
			}
			r = &Rate{}
			if json.Unmarshal(m["requests"], &r.Requests) != nil || json.Unmarshal(m["window"], &r.Window) != nil {
				return errors.New(usage)
			}
		}
		k.RateRequests, k.RateWindow = 0, 0
		if r != nil {
			d, err := time.ParseDuration(r.Window)
			if err != nil || d <= 0 || r.Requests < 1 {
				return fmt.Errorf(`rate must be {"requests": N, "window": "1m"} with N ≥ 1 and a positive window`)
			}
			k.RateRequests, k.RateWindow = r.Requests, d
		}
		return nil
	},
	"max_active_tasks": func(k *storage.APIKey, raw json.RawMessage) error {
		var n *int64
		if json.Unmarshal(raw, &n) != nil || (n != nil && *n < 1) {
			return fmt.Errorf("max_active_tasks must be a whole number, 1 or more, or null for no limit")
		}
		k.MaxActiveTasks = 0
		if n != nil {
			k.MaxActiveTasks = *n
		}
		return nil
	},
}

// keyFieldNames are the names of keyFields, in order.
var keyFieldNames = slices.Sorted(maps.Keys(keyFields))

// isNull reports whether raw, a JSON value, is null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// apply sets the fields of body on k, in the order of keyFieldNames. body must be one JSON
// object whose members are key fields, each given once and spelled exactly (strictObject).
func apply(k *storage.APIKey, body []byte) error {
	fields, err := strictObject(body, "the body", keyFieldNames...)
	if err != nil {
		return err
	}
	for _, name := range keyFieldNames {
		if raw, ok := fields[name]; ok {
			if err := keyFields[name](k, raw); err != nil {
				return err
			}
		}
	}
	if k.Quota != nil && k.Budget.Limit > 0 {
		return fmt.Errorf("quota is an alias of a budget of that many units for all time: give the key a quota or a budget, not both (set the other to null)")
	}
	return nil
}
