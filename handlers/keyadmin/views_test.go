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
	if string(b) != `{"requests":0,"tasks":0,"quota_used":0,"quota":null,"active_tasks":0}` {
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
