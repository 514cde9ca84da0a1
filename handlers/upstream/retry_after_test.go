package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestRetryAfter: seconds or an HTTP date; anything else, zero, negative or past is no wait;
// a number of seconds too large for a Duration is the longest wait, never one that wrapped
// around to a short (18446744074 s would be 290 ms) or negative one.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for value, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 7 ":                           7 * time.Second,
		"0":                             0,
		"-5":                            0,
		"1.5":                           0,
		"soon":                          0,
		"1000000000":                    1_000_000_000 * time.Second,
		"18446744074":                   time.Duration(1<<63 - 1),
		"9223372037":                    time.Duration(1<<63 - 1),
		"99999999999999999999999":       0, // not an int: no wait rather than a guess
		"Sun, 01 Mar 2026 12:00:30 GMT": 30 * time.Second,
		"Sun, 01 Mar 2026 11:00:00 GMT": 0,
	} {
		h := http.Header{}
		if value != "" {
			h.Set("Retry-After", value)
		}
		if got := RetryAfter(h, now); got != want {
			t.Errorf("Retry-After %q = %v, want %v", value, got, want)
		}
	}
}

// TestCreateReadsRetryAfterByBoardClock: a 429's Retry-After given as an HTTP date is reckoned
// from the health board's clock (the one the back-off is measured on, which tests set), not the
// real one: a date 90 s after the board's now backs the account off for 90 s.
func TestCreateReadsRetryAfterByBoardClock(t *testing.T) {
	now := time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL + "/api/v3")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: base, APIKey: "k", Models: []string{"m"}}})
	if err != nil {
		t.Fatal(err)
	}
	board := providers.NewBoard()
	board.Now = func() time.Time { return now }
	cat.WithHealth(board)
	p, _ := cat.Provider("p")
	c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 5 * time.Second}), Logger: zap.NewNop()}
	ans, _, err := c.Create(context.Background(), "acct", p, "contents/generations/tasks", []byte(`{}`))
	if err != nil || ans.Status != http.StatusTooManyRequests {
		t.Fatalf("Create = %d, %v; want the 429", ans.Status, err)
	}
	if got, want := p.Upstreams[0].CoolingUntil("acct"), now.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("the account backs off until %v, want %v (the Retry-After date by the board's clock)", got, want)
	}
}
