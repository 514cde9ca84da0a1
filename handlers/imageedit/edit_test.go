package imageedit

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/usage"
	"github.com/mediagw/mediagw/storage"
)

// An edit the provider accepted (2xx) with a task id the gateway cannot use may run there: the
// client gets 502 invalid_response and its hold is charged as estimated. An answer without any
// task id is released.
func TestUnusableTaskIDKeepsTheCharge(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		wantUsed     int64
	}{
		{"an id that is a path", `{"id":"imgt/../../files"}`, 1},
		{"no id", `{"status":"queued"}`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, tc.answer)
			}))
			t.Cleanup(up.Close)
			store := openTestStore(t)
			h := billedHandler(t, store, up.URL+"/api/v3", "upstream-secret", []billing.Price{{Model: "m", Image: billing.Micro}})
			quota := int64(10)
			r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader(
				`{"model":"m","prompt":"make it blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`))
			r.Header.Set("Content-Type", "application/json")
			entry := usage.NewEntry("/v1/images/edits")
			r = r.WithContext(usage.WithEntry(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme", Limits: storage.Limits{Quota: &quota}}), entry))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var body struct {
				Error struct{ Code string } `json:"error"`
			}
			if w.Code != 502 || json.Unmarshal(w.Body.Bytes(), &body) != nil || body.Error.Code != "invalid_response" {
				t.Fatalf("got %d %s, want 502 invalid_response", w.Code, w.Body)
			}
			bal, err := store.Balance(context.Background(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			if used := -bal.Amount / billing.Micro; used != tc.wantUsed || bal.Held != 0 {
				t.Fatalf("charged %d (%d held), want %d and nothing held", used, bal.Held, tc.wantUsed)
			}
			// The request's usage record carries what the ledger charged.
			if rec := entry.Finish(w.Code, time.Now(), "").Record; rec.Amount != tc.wantUsed*int64(billing.Micro) {
				t.Fatalf("the usage record's amount is %d, want %d", rec.Amount, tc.wantUsed*int64(billing.Micro))
			}
		})
	}
}

// openTestStore opens a Badger store in a temporary directory, closed when the test ends.
func openTestStore(t *testing.T) *storage.Badger {
	t.Helper()
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	return store
}

// billedHandler is an edit handler for the model m of one provider at base (its key apiKey),
// charging by prices on store. Its meter is closed before the store.
func billedHandler(t *testing.T, store *storage.Badger, base, apiKey string, prices []billing.Price) *Handler {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: u, APIKey: apiKey, Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	table, err := billing.NewTable("USD", prices)
	if err != nil {
		t.Fatal(err)
	}
	meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
	t.Cleanup(meter.Close)
	return &Handler{Catalog: cat, Store: store, Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop(),
		Accounting: &accounting.Accountant{Store: store, Meter: meter, Prices: table}}
}
