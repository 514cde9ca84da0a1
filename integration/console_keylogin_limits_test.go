package integration

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/mediagw/mediagw/internal/money"
)

// A key that a member logged in with an API key creates stays within that key (docs/console.md:
// "So a key cannot make itself a wider one"): not only its models, allow_ips and expiry, but its
// money and load limits too. A key that may spend 0.5 a day, send one request an hour and run
// one task at once must not mint, through the console, a key that spends what member_keys allows
// (here a quota of 1000, or nothing at all without member_keys' budget), sends without a rate and
// runs three tasks at once: on an account that was never credited the key's budget is the only
// bound on what it spends.
func TestConsoleKeyMemberCannotMintLooserLimits(t *testing.T) {
	e := startConsole(t) // member_keys: quota 1000, max_active_tasks 3, no rate
	admin := "http://" + e.g.admin + "/mediagw"
	r := call(t, http.MethodPost, admin+"/keys", "",
		`{"account":"acme","budget":{"amount":"0.5","period":"day"},"rate":{"requests":1,"window":"1h"},"max_active_tasks":1}`)
	if r.status != http.StatusCreated {
		t.Fatalf("admin key = %d %s", r.status, r.body)
	}
	narrow := r.field("key")
	// The narrow key's rate is real: its second request in the hour is refused.
	list := e.base + "/api/v3/contents/generations/tasks"
	call(t, http.MethodGet, list, narrow, nil)
	if r := call(t, http.MethodGet, list, narrow, nil); r.status != http.StatusTooManyRequests {
		t.Fatalf("the narrow key's second request in its hour = %d %s, want 429", r.status, r.body)
	}

	member := e.keyLogin(t, narrow)
	status, _, page := member.post("/keys", nil)
	if status == http.StatusForbidden {
		return // refused: no wider key was made
	}
	id := regexp.MustCompile(`Secret of ([^<]+)</label>`).FindStringSubmatch(page)
	secret := regexp.MustCompile(`id="secret" readonly value="(mg-[^"]+)"`).FindStringSubmatch(page)
	if status != http.StatusCreated || id == nil || secret == nil {
		t.Fatalf("create a key as the narrow key's member = %d", status)
	}
	r = call(t, http.MethodGet, admin+"/keys/"+id[1], "", nil)
	var minted struct {
		Quota  *int64 `json:"quota"`
		Budget *struct {
			Amount string `json:"amount"`
			Period string `json:"period"`
		} `json:"budget"`
		Rate           *struct{ Requests int } `json:"rate"`
		MaxActiveTasks *int64                  `json:"max_active_tasks"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &minted) != nil {
		t.Fatalf("the minted key = %d %s", r.status, r.body)
	}
	if minted.Budget == nil || minted.Budget.Period != "day" || minted.Quota != nil {
		t.Errorf("the key minted by a key of budget 0.5 a day has another budget: %s", r.body)
	} else if amount, err := money.Parse(minted.Budget.Amount); err != nil || amount > 500_000 {
		t.Errorf("the key minted by a key of budget 0.5 a day may spend %s a day", minted.Budget.Amount)
	}
	if minted.Rate == nil || minted.Rate.Requests > 1 {
		t.Errorf("the key minted by a key of 1 request an hour has another rate: %s", r.body)
	}
	if minted.MaxActiveTasks == nil || *minted.MaxActiveTasks > 1 {
		t.Errorf("the key minted by a key of 1 task at once may run more: %s", r.body)
	}
	// And what the narrow key may not do, the minted one does.
	for i := range 3 {
		if r := call(t, http.MethodGet, list, secret[1], nil); r.status != http.StatusOK {
			return
		} else if i == 2 {
			t.Errorf("the minted key sent 3 requests in the hour its login key may send 1 in")
		}
	}
}
