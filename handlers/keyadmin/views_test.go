package keyadmin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/storage"
)

func TestKeyViewShowsNoLimitAsNull(t *testing.T) {
	b, err := json.Marshal(view(storage.APIKey{ID: "k", Account: "a"}, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"quota":null`, `"rate":null`, `"max_active_tasks":null`, `"expires":null`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("%s lacks %s", b, field)
		}
	}
	five := int64(5)
	k := storage.APIKey{ID: "k", Account: "a", Limits: storage.Limits{Quota: &five, RateRequests: 60, RateWindow: time.Minute, MaxActiveTasks: 2}}
	b, _ = json.Marshal(view(k, false))
	for _, field := range []string{`"quota":5`, `"rate":{"requests":60,"window":"1m"}`, `"max_active_tasks":2`} {
		if !strings.Contains(string(b), field) {
			t.Errorf("%s lacks %s", b, field)
		}
	}
	b, _ = json.Marshal(Usage{})
	if string(b) != `{"requests":0,"tasks":0,"quota_used":"0","quota":null,"active_tasks":0}` {
		t.Errorf("usage = %s", b)
	}
}

func TestApplyRefusesZeroActiveTasks(t *testing.T) {
	var k storage.APIKey
	if err := apply(&k, []byte(`{"max_active_tasks":0}`)); err == nil || !strings.Contains(err.Error(), "null for no limit") {
		t.Fatalf("max_active_tasks 0: %v", err)
	}
	if err := apply(&k, []byte(`{"max_active_tasks":null}`)); err != nil || k.MaxActiveTasks != 0 {
		t.Fatalf("max_active_tasks null: %v", err)
	}
	if err := apply(&k, []byte(`[1]`)); err == nil || err.Error() != "the request body must be a JSON object" {
		t.Fatalf("array body: %v", err)
	}
}

// TestKeyBudget: a dynamic key's budget is set, shown and cleared like a Caddyfile key's
// (`budget <amount> [day|month]`); a bad amount or period, and a budget beside a quota, are
// refused with what to write.
func TestKeyBudget(t *testing.T) {
	var k storage.APIKey
	if err := apply(&k, []byte(`{"budget":{"amount":"25.5","period":"day"}}`)); err != nil {
		t.Fatal(err)
	}
	if k.Budget != (storage.Budget{Limit: 25_500_000, Period: storage.BudgetDay}) {
		t.Fatalf("budget = %+v", k.Budget)
	}
	b, _ := json.Marshal(view(k, false))
	if !strings.Contains(string(b), `"budget":{"amount":"25.5","period":"day"}`) {
		t.Fatalf("view = %s", b)
	}
	if err := apply(&k, []byte(`{"budget":{"amount":"3"}}`)); err != nil || k.Budget != (storage.Budget{Limit: 3_000_000}) {
		t.Fatalf("a budget for all time: %+v, %v", k.Budget, err)
	}
	for _, bad := range []string{`{"amount":"0"}`, `{"amount":"-1"}`, `{"amount":"1.0000001"}`, `{"amount":"1","period":"week"}`, `"5"`} {
		if err := apply(&k, []byte(`{"budget":`+bad+`}`)); err == nil || !strings.Contains(err.Error(), `budget must be {"amount": "25.50"`) {
			t.Errorf("budget %s: %v", bad, err)
		}
	}
	if err := apply(&k, []byte(`{"quota":5}`)); err == nil || !strings.Contains(err.Error(), "a quota or a budget, not both") {
		t.Fatalf("quota beside a budget: %v", err)
	}
	k = storage.APIKey{}
	if err := apply(&k, []byte(`{"budget":{"amount":"1","period":"month"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := apply(&k, []byte(`{"budget":null}`)); err != nil || k.Budget != (storage.Budget{}) {
		t.Fatalf("budget null: %+v, %v", k.Budget, err)
	}
	if b, _ := json.Marshal(view(k, false)); !strings.Contains(string(b), `"budget":null`) {
		t.Fatalf("view without a budget = %s", b)
	}
}
