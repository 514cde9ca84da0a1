package upstream

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestOpenTrustsOnlyTheUpstreamsOrigin: a result address, or a redirect, on the upstream's own
// host but another port (the gateway's admin endpoint beside a provider on 127.0.0.1), or on a
// name or address of this machine (localhost, [::1]), is not the upstream's origin: it is
// connected to only when public, so it is ErrNotPublic and never called. The upstream's own
// origin is still fetched, with the credential on the first request only.
func TestOpenTrustsOnlyTheUpstreamsOrigin(t *testing.T) {
	var adminHits atomic.Int64
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adminHits.Add(1)
		_, _ = io.WriteString(w, `{"apps":{"the running config":"with every provider's key"}}`)
	}))
	defer admin.Close()
	adminPort := admin.Listener.Addr().(*net.TCPAddr).Port
	var sawKey atomic.Value
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		sawKey.Store(r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, "the video")
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/v1")
	u := &providers.Upstream{Name: "a", BaseURL: base, APIKey: "upstream-secret"}
	c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 10 * time.Second}), Logger: zap.NewNop()}

	ipv6 := "http://[::1]:" + strconv.Itoa(adminPort) + "/config/"
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		// An admin endpoint on the IPv6 loopback, where this machine has one.
		admin6 := &httptest.Server{Listener: ln, Config: admin.Config}
		admin6.Start()
		defer admin6.Close()
		ipv6 = admin6.URL + "/config/"
	}
	adminURL := "http://127.0.0.1:" + strconv.Itoa(adminPort) + "/config/"
	for name, target := range map[string]string{
		"another port of the upstream's host":                adminURL,
		"a redirect to another port of the upstream's host":  up.URL + "/v1/content?to=" + url.QueryEscape(adminURL),
		"a redirect to localhost by name":                    up.URL + "/v1/content?to=" + url.QueryEscape("http://localhost:"+strconv.Itoa(adminPort)+"/config/"),
		"a redirect to [::1]":                                up.URL + "/v1/content?to=" + url.QueryEscape(ipv6),
		"a redirect by https to another port of the host":    up.URL + "/v1/content?to=" + url.QueryEscape("https://127.0.0.1:"+strconv.Itoa(adminPort)+"/config/"),
		"the upstream's host by another scheme and its port": strings.Replace(up.URL, "http://", "https://", 1) + "/v1/content",
		"a redirect to the metadata service":                 up.URL + "/v1/content?to=" + url.QueryEscape("http://169.254.169.254/latest/meta-data/"),
		"a scheme-relative redirect to another port":         up.URL + "/v1/content?to=" + url.QueryEscape("//127.0.0.1:"+strconv.Itoa(adminPort)+"/config/"),
	} {
		t.Run(name, func(t *testing.T) {
			adminHits.Store(0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := c.Open(ctx, u, target)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("Open(%s) = %d %s; want ErrNotPublic", target, resp.StatusCode, body)
			}
			if !errors.Is(err, ErrNotPublic) {
				t.Fatalf("Open(%s) = %v; want ErrNotPublic", target, err)
			}
			if n := adminHits.Load(); n != 0 {
				t.Fatalf("the admin endpoint was called %d times", n)
			}
		})
	}

	for name, tc := range map[string]struct{ target, key string }{
		"the upstream's origin":             {up.URL + "/v1/files/x:download", "Bearer upstream-secret"},
		"its origin in upper case":          {strings.ToUpper(up.URL[:len("http://")]) + up.URL[len("http://"):] + "/v1/files/x", "Bearer upstream-secret"},
		"a redirect within the origin":      {up.URL + "/v1/content?to=" + url.QueryEscape(up.URL+"/cdn/x.mp4"), ""},
		"a relative redirect in the origin": {up.URL + "/v1/content?to=" + url.QueryEscape("/cdn/x.mp4"), ""},
	} {
		t.Run(name, func(t *testing.T) {
			sawKey.Store("none")
			resp, err := c.Open(context.Background(), u, tc.target)
			if err != nil {
				t.Fatalf("Open(%s) = %v", tc.target, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "the video" || sawKey.Load() != tc.key {
				t.Fatalf("Open(%s) = %q, the upstream saw the credential %q; want the video and %q", tc.target, body, sawKey.Load(), tc.key)
			}
		})
	}
}
