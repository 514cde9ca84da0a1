package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
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
