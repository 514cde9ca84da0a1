package integration

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRefusalTheClientLeftIsNotCharged: an upstream that answers an error status made nothing,
// whether or not the client stayed to read the error: a client that reads a 503's head and
// leaves while its body still comes (a client timing out as an overloaded provider answers, say)
// has its hold released, as one that read it whole has; so has a 307 the provider answers. Before,
// the client's leaving charged the estimate (0.1, max_tokens 100), for a request nothing served.
func TestRefusalTheClientLeftIsNotCharged(t *testing.T) {
	up := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("X-Test-Answer"), "redirect") {
			w.Header().Set("Location", "https://elsewhere.invalid/v1/chat/completions")
			w.WriteHeader(http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"message":"The server is overloaded`)
		w.(http.Flusher).Flush()
		for i := 0; i < 40 && r.Context().Err() == nil; i++ {
			time.Sleep(50 * time.Millisecond)
			fmt.Fprint(w, strings.Repeat(" ", 1024))
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, `","type":"server_error","code":null}}`)
	}))
	base, g := startSimGateway(t, longStreamCaddyfile, map[string]string{"up_url": up.URL})
	keysEnv{g: g, base: base}.credit(t, "long-stream", "10", "refused-left-1")
	for _, c := range []struct {
		name, answer string
		leave        bool
	}{
		{"a 503 the client leaves", "", true},
		{"a 503 read whole", "", false},
		{"a 307", "redirect", false},
	} {
		from := len(ledgerEntries(t, g, "long-stream"))
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions", strings.NewReader(`{"model":"long-chat","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Authorization", "Bearer mg-long-stream")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Test-Answer", c.answer)
		resp, err := http.DefaultTransport.RoundTrip(req) // no redirect followed
		if err != nil {
			t.Fatal(err)
		}
		if c.leave {
			bufio.NewReader(resp.Body).ReadByte() // the head and a first byte, then the client is gone
		} else {
			_, _ = bufio.NewReader(resp.Body).WriteTo(new(strings.Builder))
		}
		resp.Body.Close()
		if held, end := toolEnded(t, g, "long-stream", from); held != "0.1" || end != "release" {
			t.Errorf("%s (%d): held %s, %s; want 0.1, release", c.name, resp.StatusCode, held, end)
		}
	}
}
