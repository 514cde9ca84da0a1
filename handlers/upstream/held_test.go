package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestCallHeld: a successful answer of up to held bytes is answered whole; a longer one with its
// first bytes and the rest open, which reads the answer to its end byte for byte, or ErrTooLarge
// past MaxAnswer when its length was not declared (ErrTooLarge at once when it was); an error
// answer past held is ErrUnreadable.
func TestCallHeld(t *testing.T) {
	var status int
	var body string
	var chunked bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/v1")
	p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "provider-secret"}
	c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 30 * time.Second}), Logger: zap.NewNop(), MaxAnswer: 1 << 20}
	long := `{"data":"` + strings.Repeat("A", 200_000) + `"}`
	for _, tc := range []struct {
		status  int
		body    string
		chunked bool
		rest    bool
		err     error
		restErr error
	}{
		{status: 200, body: `{"status":"queued"}`},
		{status: 200, body: long, rest: true},
		{status: 200, body: long, chunked: true, rest: true},
		{status: 200, body: strings.Repeat("A", 1<<20+1), err: ErrTooLarge},
		{status: 200, body: strings.Repeat("A", 1<<20+1), chunked: true, rest: true, restErr: ErrTooLarge},
		{status: 200, body: strings.Repeat("A", 1<<20), chunked: true, rest: true},
		{status: 400, body: `{"error":{"message":"` + strings.Repeat("A", 70_000) + `"}}`, err: ErrUnreadable},
	} {
		status, body, chunked = tc.status, tc.body, tc.chunked
		ans, rest, err := c.CallHeld(context.Background(), p, http.MethodGet, "images/tasks/x", 64<<10)
		if !errors.Is(err, tc.err) || (rest != nil) != tc.rest {
			t.Fatalf("%d of %d bytes (chunked %v): rest %v, err %v; want rest %v, err %v", tc.status, len(tc.body), tc.chunked, rest != nil, err, tc.rest, tc.err)
		}
		if err != nil {
			continue
		}
		got := string(ans.Body)
		if rest != nil {
			if len(ans.Body) <= 64<<10 || rest.Declared != map[bool]int64{true: -1, false: int64(len(tc.body))}[tc.chunked] {
				t.Fatalf("%d bytes (chunked %v): %d bytes held, declared %d", len(tc.body), tc.chunked, len(ans.Body), rest.Declared)
			}
			b, err := io.ReadAll(rest)
			rest.Close()
			if !errors.Is(err, tc.restErr) {
				t.Fatalf("%d bytes (chunked %v): reading the rest: %v, want %v", len(tc.body), tc.chunked, err, tc.restErr)
			}
			if err != nil {
				continue
			}
			got += string(b)
		}
		if got != tc.body {
			t.Fatalf("%d bytes (chunked %v): %d bytes read, not the answer", len(tc.body), tc.chunked, len(got))
		}
	}
}

// TestCallHeldWithinASmallMaxAnswer: a MaxAnswer below what CallHeld holds still bounds every
// answer, short ones included.
func TestCallHeldWithinASmallMaxAnswer(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Transfer-Encoding", "chunked")
		io.WriteString(w, `{"data":"`+strings.Repeat("A", 20_000)+`"}`)
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/v1")
	p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "provider-secret"}
	c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 30 * time.Second}), Logger: zap.NewNop(), MaxAnswer: 10_000}
	if _, _, err := c.CallHeld(context.Background(), p, http.MethodGet, "images/tasks/x", 64<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 20 kB answer past a MaxAnswer of 10 kB: err %v, want ErrTooLarge", err)
	}
}
