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
			base, _ := url.Parse(up.URL + "/api/v3")
			cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: base, APIKey: "upstream-secret", Models: []string{"m"}}})
			if err != nil {
				t.Fatal(err)
			}
			store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			meter := accounting.NewMeter(store, time.Hour, zap.NewNop())
			t.Cleanup(meter.Close)
			prices, err := billing.NewTable("USD", []billing.Price{{Model: "m", Image: billing.Micro}})
			if err != nil {
				t.Fatal(err)
			}
			h := &Handler{Catalog: cat, Store: store, Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop(),
				Accounting: &accounting.Accountant{Store: store, Meter: meter, Prices: prices}}
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
