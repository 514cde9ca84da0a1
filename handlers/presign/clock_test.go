package presign

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/testclock"
	"github.com/mediagw/mediagw/storage"
)

// TestPresignAcrossDates presigns at each test instant with a rate limit kept in a real store:
// the object key carries the clock's UTC day, expires_at is the clock plus the URL's life, and a
// window that straddles midnight (or the year's end) refuses the third call and allows it once the
// window has passed on the clock.
func TestPresignAcrossDates(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testclock.Each(t, func(t *testing.T, at time.Time) {
		clock := testclock.New(at)
		h := &Handler{Storage: &fakeStorage{}, Prefix: "up/", Now: clock.Now,
			Limit: &RateLimit{Requests: 2, Window: time.Minute, Windows: store, Now: clock.Now}}
		presign := func() *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/v1/upload/presign", strings.NewReader(`{"filename":"a.png"}`))
			r.Header.Set("Content-Type", "application/json")
			r = r.WithContext(auth.WithIdentity(r.Context(), auth.Identity{KeyID: "k-" + at.Format(time.RFC3339), Account: "acme"}))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w
		}
		for i, step := range []time.Duration{0, 40 * time.Second} {
			day := clock.Advance(step)
			w := presign()
			if w.Code != http.StatusOK {
				t.Fatalf("call %d: status %d: %s", i+1, w.Code, w.Body)
			}
			var resp Response
			if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
				t.Fatal(err)
			}
			if want := "/" + day.UTC().Format("2006/01/02") + "/"; !strings.Contains(resp.ObjectKey, want) {
				t.Errorf("call %d: object key %q lacks the clock's day %s", i+1, resp.ObjectKey, want)
			}
			if want := day.Add(DefaultExpires).Unix(); resp.ExpiresAt != want {
				t.Errorf("call %d: expires_at = %d, want %d", i+1, resp.ExpiresAt, want)
			}
		}
		w := presign()
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "20" {
			t.Fatalf("third call in the window: status %d, Retry-After %q: %s", w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		clock.Advance(20 * time.Second)
		if w := presign(); w.Code != http.StatusOK {
			t.Fatalf("after the window: status %d: %s", w.Code, w.Body)
		}
	})
}
