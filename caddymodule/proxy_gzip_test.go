package caddymodule

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mediagw/mediagw/handlers/providers"
)

func gzipped(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, text); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// An attempt asks for gzip in its own header, whatever the client accepts, except where net/http
// would not ask by itself: a HEAD request, a Range request, compression turned off.
func TestAttemptAsksForGzipItself(t *testing.T) {
	base, err := url.Parse("http://api.example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	p := &providers.Provider{Name: "p", Models: []string{"m"}, Upstreams: []*providers.Upstream{{Name: "a", BaseURL: base, APIKey: "operator-key"}}}
	if _, err := providers.NewCatalog([]*providers.Provider{p}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, method, acceptEncoding, rng string
		compression                       bool
		want                              string
	}{
		{"client accepts br", http.MethodPost, "br", "", true, "gzip"},
		{"client accepts nothing", http.MethodGet, "", "", true, "gzip"},
		{"client accepts gzip", http.MethodGet, "gzip, deflate", "", true, "gzip"},
		{"HEAD", http.MethodHead, "gzip", "", true, ""},
		{"Range", http.MethodGet, "gzip", "bytes=0-99", true, ""},
		{"compression off", http.MethodGet, "gzip", "", false, ""},
	} {
		d := providers.NewDispatch(p, p.Upstreams)
		d.Model, d.UpstreamModel, d.Rest = "m", "m", "/files/f/content"
		req := httptest.NewRequest(c.method, "http://gateway.test/v1/files/f/content", nil)
		if c.acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", c.acceptEncoding)
		}
		if c.rng != "" {
			req.Header.Set("Range", c.rng)
		}
		tr := ProxyTransport{gzip: c.compression}
		attempt, err := tr.outgoing(req, d, p.Upstreams[0])
		if err != nil {
			t.Fatal(err)
		}
		got := attempt.request.Header["Accept-Encoding"]
		if c.want == "" && got != nil || c.want != "" && fmt.Sprint(got) != "["+c.want+"]" || attempt.gzip != (c.want != "") {
			t.Errorf("%s: the attempt's Accept-Encoding is %q (asked: %v), want %q", c.name, got, attempt.gzip, c.want)
		}
		if req.Header.Get("Accept-Encoding") != c.acceptEncoding {
			t.Errorf("%s: the client's request changed", c.name)
		}
	}
}

// A gzip answer to an attempt that asked for it is decoded as net/http decodes one: the body
// read plain, no Content-Encoding or Content-Length; another encoding, and an answer without a
// body, are left as they are.
func TestDecodeGzip(t *testing.T) {
	for _, encoding := range []string{"gzip", "GZip"} {
		resp := &http.Response{Header: http.Header{"Content-Encoding": {encoding}, "Content-Length": {"40"}}, ContentLength: 40,
			Body: io.NopCloser(bytes.NewReader(gzipped(t, `{"ok":true}`)))}
		decodeGzip(resp)
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != `{"ok":true}` || len(resp.Header) != 0 || resp.ContentLength != -1 || !resp.Uncompressed {
			t.Errorf("%s: %q %v, header %v, length %d", encoding, body, err, resp.Header, resp.ContentLength)
		}
		if err := resp.Body.Close(); err != nil {
			t.Error(err)
		}
	}
	for _, body := range []io.ReadCloser{http.NoBody, io.NopCloser(strings.NewReader(""))} {
		empty := &http.Response{Header: http.Header{"Content-Encoding": {"gzip"}, "Content-Length": {"0"}}, Body: body}
		if decodeGzip(empty); empty.Body != body || len(empty.Header) != 2 || empty.ContentLength != 0 {
			t.Errorf("an answer without a body was changed: %v %d", empty.Header, empty.ContentLength)
		}
	}
	for _, encoding := range []string{"", "br", "gzip, br", "gzi", "gzip2", "gz\u0131p"} {
		resp := &http.Response{Header: http.Header{"Content-Encoding": {encoding}}, ContentLength: 3, Body: io.NopCloser(strings.NewReader("abc"))}
		decodeGzip(resp)
		if body, _ := io.ReadAll(resp.Body); string(body) != "abc" || resp.Header.Get("Content-Encoding") != encoding || resp.ContentLength != 3 {
			t.Errorf("Content-Encoding %q: decoded (%q)", encoding, body)
		}
	}
}

// A gzip body that does not decode fails every Read with the same error, and a read after Close
// fails.
func TestGunzipBodyErrorsAndClose(t *testing.T) {
	bad := &gunzipBody{body: io.NopCloser(strings.NewReader("not gzip at all"))}
	_, first := bad.Read(make([]byte, 10))
	_, second := bad.Read(make([]byte, 10))
	if first == nil || !errors.Is(second, first) {
		t.Errorf("reads of a body that is not gzip: %v, then %v", first, second)
	}
	g := &gunzipBody{body: io.NopCloser(bytes.NewReader(gzipped(t, "hello")))}
	if _, err := g.Read(make([]byte, 2)); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Read(make([]byte, 2)); !errors.Is(err, errReadAfterClose) {
		t.Errorf("a read after Close: %v", err)
	}
	if err := g.Close(); err != nil { // a second Close closes the body again, nothing more
		t.Fatal(err)
	}
}

// A Close while a Read waits for the answer ends that Read (run with -race).
func TestGunzipBodyCloseDuringRead(t *testing.T) {
	pr, pw := io.Pipe()
	g := &gunzipBody{body: pr}
	done := make(chan error)
	go func() {
		_, err := g.Read(make([]byte, 10))
		done <- err
	}()
	// The Read is under way (or about to be) when its source is written to half way and closed.
	if _, err := pw.Write(gzipped(t, "hello")[:4]); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("the Read went on after Close")
	}
}

// Through Caddy: the upstream is asked for gzip once, in the attempt's own header, whatever the
// client accepts, and its gzip answer reaches the client decoded; with the http transport's
// compression off, the upstream is asked for no encoding. The request's body and Content-Length
// reach it as they were sent.
func TestTransportAsksForGzipAndDecodesIt(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("XDG_DATA_HOME", dir)
	var mu sync.Mutex
	var asked [][]string
	var protos []string
	const chat = `{"model":"bench-chat","messages":[]}`
	zipped := gzipped(t, benchAnswer)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		mu.Lock()
		asked = append(asked, r.Header.Values("Accept-Encoding"))
		protos = append(protos, r.Proto)
		if string(body) != chat || r.ContentLength != int64(len(chat)) || r.Header.Get("User-Agent") != "hey/0.0.1" {
			t.Errorf("the upstream got %q, Content-Length %d, User-Agent %q", body, r.ContentLength, r.Header.Get("User-Agent"))
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.RawQuery == "empty" { // a gzip label on no body at all: passed on as it is
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", "0")
			return
		}
		if r.Header.Get("Accept-Encoding") != "gzip" {
			io.WriteString(w, benchAnswer)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(zipped)
	}))
	defer up.Close()
	// The same upstream over HTTP/2 with TLS (its certificate trusted by the transport's
	// tls_insecure_skip_verify), where the transport writes the request's header otherwise.
	up2 := httptest.NewUnstartedServer(up.Config.Handler)
	up2.EnableHTTP2 = true
	up2.StartTLS()
	defer up2.Close()
	for _, c := range []struct{ url, compression string }{
		{up.URL, ""}, {up.URL, "compression off"}, {up2.URL, "tls_insecure_skip_verify"}, {up2.URL, "tls_insecure_skip_verify\n\t\t\t\tcompression off"},
	} {
		compression := c.compression
		port := strconv.Itoa(closedPort(t))
		config := quietGlobals(fmt.Sprintf(`		storage badger %s
		provider chat {
			base_url %s/v1
			api_key upstream-key
			models bench-chat
		}
		key mg-test-key {
			account test
		}
`, filepath.Join(dir, "store"+strconv.Itoa(len(compression))), c.url)) + fmt.Sprintf(`http://127.0.0.1:%s {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw {
				%s
			}
			lb_policy first
		}
	}
}
`, port, compression)
		srv, stop := startCaddy(t, config)
		mu.Lock()
		asked, protos = nil, nil
		mu.Unlock()
		for _, ae := range []string{"", "br", "gzip"} {
			r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:"+port+"/v1/chat/completions", strings.NewReader(chat))
			// The headers a request read from the wire has, as hey's: with Caddy's Via and
			// X-Forwarded-*, nine names for the attempt.
			r.Header.Set("Content-Length", strconv.Itoa(len(chat)))
			r.Header.Set("User-Agent", "hey/0.0.1")
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer mg-test-key")
			if ae != "" {
				r.Header.Set("Accept-Encoding", ae)
			}
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			if w.Code != http.StatusOK || w.Body.String() != benchAnswer || w.Header().Get("Content-Encoding") != "" {
				t.Errorf("%q, client accepts %q: %d %q %q", compression, ae, w.Code, w.Header().Get("Content-Encoding"), w.Body)
			}
		}
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:"+port+"/v1/chat/completions?empty", strings.NewReader(chat))
		r.Header.Set("Content-Length", strconv.Itoa(len(chat)))
		r.Header.Set("User-Agent", "hey/0.0.1")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer mg-test-key")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Encoding") != "gzip" {
			t.Errorf("%q, an empty answer labelled gzip: %d %q %q", compression, w.Code, w.Header().Get("Content-Encoding"), w.Body)
		}
		want := "[[gzip] [gzip] [gzip] [gzip]]"
		if strings.Contains(compression, "compression off") {
			want = "[[] [] [] []]"
		}
		mu.Lock()
		if fmt.Sprint(asked) != want {
			t.Errorf("%q: the upstream was asked for %v, want %s", compression, asked, want)
		}
		if wantProto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[c.url == up2.URL]; protos[0] != wantProto {
			t.Errorf("%q: the upstream was called over %s, want %s", compression, protos[0], wantProto)
		}
		mu.Unlock()
		stop()
	}
}

// quietGlobals is a Caddyfile's global options for a test in this process, around the mediagw
// app's block (its lines indented two tabs): no admin endpoint, no saved config, the default log
// discarded.
func quietGlobals(mediagw string) string {
	return "{\n\tadmin off\n\tpersist_config off\n\tlog default {\n\t\toutput discard\n\t}\n\tmediagw {\n" + mediagw + "\t}\n}\n"
}
