package caddymodule

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// With Caddy's log at debug level, reverse_proxy logs each attempt's request ("upstream
// roundtrip") and hides only Authorization there. An upstream key sent in x-api-key or
// x-goog-api-key must reach the upstream and never the log.
func TestUpstreamKeyNeverReachesTheDebugLog(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("XDG_DATA_HOME", dir)
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("X-Api-Key")+r.Header.Get("X-Goog-Api-Key"))
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if _, err := io.WriteString(w, benchAnswer); err != nil {
			return
		}
	}))
	defer up.Close()
	logFile := filepath.Join(dir, "debug.log")
	port := strconv.Itoa(closedPort(t))
	config := fmt.Sprintf(`{
	admin off
	persist_config off
	log default {
		output file %[1]s
		level DEBUG
	}
	mediagw {
		storage badger %[2]s
		provider anthropic {
			models claude-x
			auth_style x-api-key
			upstream main {
				base_url %[3]s/v1
				api_key operator-secret-anthropic
			}
		}
		provider gemini {
			models gemini-x
			auth_style x-goog-api-key
			upstream main {
				base_url %[3]s/v1
				api_key operator-secret-gemini
			}
		}
		key mg-test-key {
			account test
		}
	}
}
http://127.0.0.1:%[4]s {
`+transportRoute()+`}
`, logFile, filepath.Join(dir, "store"), up.URL, port)
	srv, stop := startCaddy(t, config)
	for _, model := range []string{"claude-x", "gemini-x"} {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:"+port+"/v1/chat/completions",
			bytes.NewReader([]byte(`{"model":"`+model+`","messages":[]}`)))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer mg-test-key")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", model, w.Code, w.Body)
		}
	}
	stop() // flush and close the log
	if want := []string{"operator-secret-anthropic", "operator-secret-gemini"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("the upstream received keys %q, want %q", seen, want)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "upstream roundtrip") {
		t.Fatalf("the debug log has no upstream roundtrip entry, so the test proves nothing:\n%s", logged)
	}
	for _, secret := range []string{"operator-secret", "mg-test-key"} {
		if strings.Contains(string(logged), secret) {
			t.Errorf("%q reached the debug log", secret)
		}
	}
}
