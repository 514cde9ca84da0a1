package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestClientTimeoutBoundsTheWholeAnswer checks that the HTTP client's Timeout, which Call applies
// itself, ends a call whose answer does not start in time and one whose body stops half way:
// both are ErrTimeout (504), as they were when http.Client applied it.
func TestClientTimeoutBoundsTheWholeAnswer(t *testing.T) {
	// Each handler reads the request (so the server notices the client leaving) and then waits
	// for the client to leave, or 10 s at most.
	wait := func(r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	}
	for name, handler := range map[string]http.HandlerFunc{
		"no headers": func(w http.ResponseWriter, r *http.Request) { wait(r) },
		"half a body": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.Write([]byte(`{"id":`))
			w.(http.Flusher).Flush()
			wait(r)
		},
	} {
		t.Run(name, func(t *testing.T) {
			up := httptest.NewServer(handler)
			defer up.Close()
			base, _ := url.Parse(up.URL + "/api/v3")
			p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "k"}
			c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 300 * time.Millisecond}), Logger: zap.NewNop()}
			_, err := c.Call(context.Background(), p, http.MethodPost, "contents/generations/tasks", []byte(`{}`))
			if !errors.Is(err, ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
		})
	}
}

// TestRedirectsAreNotFollowedByAnyClient checks that Call follows no redirect even with an HTTP
// client whose policy would (http.Client's default).
func TestRedirectsAreNotFollowedByAnyClient(t *testing.T) {
	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer target.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/api/v3")
	p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "provider-secret"}
	c := Client{HTTP: &http.Client{Timeout: 30 * time.Second}, Logger: zap.NewNop()}
	if _, err := c.Call(context.Background(), p, http.MethodPost, "contents/generations/tasks", []byte(`{}`)); !errors.Is(err, ErrRedirected) {
		t.Fatalf("err = %v, want ErrRedirected", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}
