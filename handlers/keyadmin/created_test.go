package keyadmin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestCreatedKeyIsDatedByTheClock creates a key at each test instant: created_at is the handler's
// clock to the second, and the stored key carries the same date.
func TestCreatedKeyIsDatedByTheClock(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testclock.Each(t, func(t *testing.T, at time.Time) {
		h := &Handler{Store: store, Now: testclock.New(at.Add(900 * time.Millisecond)).Now}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mediagw/keys", strings.NewReader(`{"account":"acme"}`)))
		if rec.Code != http.StatusCreated {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		var got Created
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got.CreatedAt == nil || !got.CreatedAt.Equal(at) {
			t.Fatalf("created_at = %v, want %s", got.CreatedAt, at.Format(time.RFC3339))
		}
		stored, err := store.KeyByID(t.Context(), got.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !stored.CreatedAt.Equal(at) {
			t.Fatalf("stored created_at = %s, want %s", stored.CreatedAt, at)
		}
	})
}
