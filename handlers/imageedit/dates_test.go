package imageedit

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestImageTaskRecordAcrossDates accepts an edit as a task at each test instant: the ownership
// record is dated by the handler's clock and kept for the retention from then (the store on the
// same clock).
func TestImageTaskRecordAcrossDates(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"imgt-abc","status":"queued"}`)
	}))
	t.Cleanup(up.Close)
	base, _ := url.Parse(up.URL + "/api/v3")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: base, APIKey: "upstream-secret", Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		h := &Handler{Catalog: cat, Store: store, Client: &http.Client{Timeout: 10 * time.Second}, Logger: zap.NewNop(),
			Retention: 2 * time.Hour, Now: clock.Now}
		r := httptest.NewRequest("POST", "/v1/images/edits", strings.NewReader(
			`{"model":"m","prompt":"make it blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`))
		r.Header.Set("Content-Type", "application/json")
		r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k1", Account: "acme"}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("edit: %d %s", w.Code, w.Body)
		}
		rec, err := store.Task(context.Background(), "imgt-abc")
		if err != nil {
			t.Fatal(err)
		}
		if rec.Account != "acme" || rec.CreatedAt != at.Unix() || rec.FinishedAt != at.Unix() || !rec.Expiry().Equal(at.Add(2*time.Hour)) {
			t.Fatalf("record %+v; want created and finished at %d, kept two hours", rec, at.Unix())
		}
	})
}
