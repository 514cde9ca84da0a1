package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/providers"
)

func TestRedirectsAreNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte(`{"id":"cgt-elsewhere"}`))
	}))
	defer target.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/steal", status)
		}))
		base, _ := url.Parse(up.URL + "/api/v3")
		p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "provider-secret"}
		c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 30 * time.Second}), Logger: zap.NewNop()}
		_, err := c.Call(context.Background(), p, http.MethodPost, "contents/generations/tasks", []byte(`{}`))
		var e *apierror.Error
		if !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Code != "invalid_response" {
			t.Errorf("%d: err = %v, want a 502 invalid_response", status, err)
		}
		up.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

func TestProxyOnlyWhenConfigured(t *testing.T) {
	// Go reads the proxy environment once per process: set it before any client asks.
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:3128")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
	req := httptest.NewRequest(http.MethodGet, "https://provider.example.com/api/v3/x", nil)

	def := NewHTTPClient(ClientOptions{}).Transport.(*http.Transport)
	if def.Proxy != nil {
		if u, err := def.Proxy(req); err != nil || u != nil {
			t.Fatalf("default client uses proxy %v (err %v)", u, err)
		}
	}
	opted := NewHTTPClient(ClientOptions{ProxyFromEnvironment: true}).Transport.(*http.Transport)
	if opted.Proxy == nil {
		t.Fatal("ProxyFromEnvironment set, but the client has no proxy function")
	}
	u, err := opted.Proxy(req)
	if err != nil || u == nil || u.Host != "127.0.0.1:3128" {
		t.Fatalf("opted-in client proxy = %v (err %v), want the environment's", u, err)
	}
}

// TestRedirectsAreNotFollowedThroughHTTPClient: calls that go through http.Client (a client with
// a cookie jar, a base URL with user information) follow no redirect either, whatever the
// client's CheckRedirect: net/http would send the credential headers on to the new host.
func TestRedirectsAreNotFollowedThroughHTTPClient(t *testing.T) {
	var elsewhere atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Write([]byte(`{"id":"cgt-elsewhere"}`))
	}))
	defer target.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	withJar := &http.Client{Jar: jar, Timeout: 30 * time.Second} // CheckRedirect nil: follows
	plain := &http.Client{Timeout: 30 * time.Second}
	for _, tc := range []struct {
		name string
		http *http.Client
		base string
	}{
		{"cookie jar", withJar, up.URL + "/api/v3"},
		{"user information", plain, strings.Replace(up.URL, "http://", "http://user:pass@", 1) + "/api/v3"},
	} {
		base, err := url.Parse(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "provider-secret"}
		c := Client{HTTP: tc.http, Logger: zap.NewNop()}
		_, err = c.Call(context.Background(), p, http.MethodPost, "contents/generations/tasks", []byte(`{}`))
		if !errors.Is(err, ErrRedirected) {
			t.Errorf("%s: err = %v, want ErrRedirected", tc.name, err)
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
	if withJar.CheckRedirect != nil {
		t.Fatal("Call changed the caller's client")
	}
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAnswerWithoutBody: a custom transport's answer without a body is an empty answer, and one
// with neither an answer nor an error is an unreachable upstream, not a panic.
func TestAnswerWithoutBody(t *testing.T) {
	base, err := url.Parse("http://127.0.0.1:1/api/v3")
	if err != nil {
		t.Fatal(err)
	}
	p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "provider-secret"}
	noBody := Client{HTTP: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}}, nil
	})}, Logger: zap.NewNop()}
	ans, err := noBody.Call(context.Background(), p, http.MethodGet, "contents/generations/tasks/cgt-1", nil)
	if err != nil || ans.Status != http.StatusOK || len(ans.Body) != 0 {
		t.Fatalf("an answer without a body = %+v, %v; want an empty 200", ans, err)
	}
	nothing := Client{HTTP: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, nil
	})}, Logger: zap.NewNop()}
	if _, err := nothing.Call(context.Background(), p, http.MethodGet, "contents/generations/tasks/cgt-1", nil); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("no answer and no error = %v, want ErrUnreachable", err)
	}
}

// Until bounds a call that the HTTP client's Timeout would let run on, and a call made past it
// ends at once; either way the caller gets ErrTimeout, as for the Timeout itself.
func TestUntilBoundsCalls(t *testing.T) {
	// An upstream that never answers: once it has read the body, the server sees the call given
	// up (its connection closed) and ends the request's context.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err == nil {
			<-r.Context().Done()
		}
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/api/v3")
	p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "provider-secret"}
	for _, until := range []time.Duration{200 * time.Millisecond, -time.Second} {
		c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: time.Minute}), Logger: zap.NewNop(), Until: time.Now().Add(until)}
		start := time.Now()
		_, err := c.Call(context.Background(), p, http.MethodPost, "contents/generations/tasks", []byte(`{}`))
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("until %v: the call took %v", until, took)
		}
		if err != ErrTimeout {
			t.Fatalf("until %v: err = %v, want ErrTimeout", until, err)
		}
	}
}
