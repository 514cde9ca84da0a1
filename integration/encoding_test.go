package integration

import (
	"bytes"
	"compress/flate"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestGatewayChoosesTheEncodingItReads has a provider that answers an error quoting the
// operator's key in whatever encoding it is asked for, or in one it picks itself. Toward the
// provider the gateway asks only for gzip (or nothing), whatever the client's Accept-Encoding;
// an error answer in an encoding the redaction cannot read (deflate, br, zstd), and one past the
// redaction's 64 KiB bound, is refused with 502 in the endpoint's shape, never passed on.
func TestGatewayChoosesTheEncodingItReads(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	refusal := `{"error":{"message":"key ` + operatorKey + ` is not allowed","type":"invalid_request_error","code":"invalid_api_key"}}`
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		encoding := r.URL.Query().Get("send")
		switch {
		case encoding == "" && strings.Contains(r.Header.Get("Accept-Encoding"), "deflate"):
			encoding = "deflate"
		case encoding == "big":
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"message":"`+strings.Repeat("x", 70<<10)+` `+operatorKey+`"}}`)
			return
		}
		if encoding == "" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, refusal)
			return
		}
		// deflate, or a label the gateway cannot decode over bytes that hold the key.
		w.Header().Set("Content-Encoding", encoding)
		w.WriteHeader(http.StatusUnauthorized)
		if encoding == "deflate" {
			zw, _ := flate.NewWriter(w, flate.BestSpeed)
			io.WriteString(zw, refusal)
			zw.Close()
			return
		}
		io.WriteString(w, refusal)
	}))
	t.Cleanup(provider.Close)
	base, _ := startSimGateway(t, redactionCaddyfile, map[string]string{"upstream_url": provider.URL, "operator_key": operatorKey})

	send := func(query, acceptEncoding string) response {
		t.Helper()
		req, err := http.NewRequest("POST", base+"/v1/chat/completions"+query, strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mg-redaction")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept-Encoding", acceptEncoding) // the client decodes (or not) itself
		return do(t, req)
	}
	for _, ae := range []string{"deflate", "br", "zstd", "deflate, br, zstd, gzip;q=0", "*"} {
		r := send("", ae)
		if bytes.Contains(r.body, []byte("operator0000")) || bytes.Contains(deflated(r.body), []byte("operator0000")) {
			t.Errorf("Accept-Encoding %q: the client got the operator's key: %d %q", ae, r.status, head(r.body))
		}
		if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), "[redacted]") {
			t.Errorf("Accept-Encoding %q: %d %q, want the provider's 401 with the key redacted", ae, r.status, head(r.body))
		}
	}
	mu.Lock()
	for _, ae := range asked {
		if ae != "" && ae != "gzip" && ae != "identity" {
			t.Errorf("the provider was asked for Accept-Encoding %q; want gzip or identity only", ae)
		}
	}
	mu.Unlock()
	for _, query := range []string{"?send=deflate", "?send=br", "?send=zstd", "?send=gzip,%20br", "?send=big"} {
		r := send(query, "gzip, deflate, br, zstd")
		if r.status != http.StatusBadGateway || bytes.Contains(r.body, []byte("operator0000")) ||
			r.header.Get("Content-Encoding") != "" || !strings.Contains(string(r.body), `"code":"invalid_response"`) {
			t.Errorf("an error answer the redaction cannot read (%s) = %d %q %q, want 502 invalid_response", query, r.status, r.header.Get("Content-Encoding"), head(r.body))
		}
	}
}

// head is the start of an answer's body, for a test's message.
func head(b []byte) []byte { return b[:min(len(b), 200)] }

// deflated is b inflated, or nil when b is not deflate data.
func deflated(b []byte) []byte {
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil
	}
	return out
}
