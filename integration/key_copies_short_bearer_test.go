package integration

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestShortBearerKeepsOtherHeadersInItsLog: a caller refused for an unknown one-character key
// ("8") keeps its User-Agent and query in its 401's access log entry: copies are stripped of a
// key that authenticated or is long enough to be one, so that a short guess cannot erase the
// record of a refused request (every header and query pair holding an "8").
func TestShortBearerKeepsOtherHeadersInItsLog(t *testing.T) {
	rec := newRecorder(t)
	accessLog := filepath.Join(t.TempDir(), "access.log")
	base, _ := startSimGateway(t, keyCopiesCaddyfile, map[string]string{"rec_url": rec.URL, "access_log": accessLog})
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions?probe=sqlmap-1.8", strings.NewReader(`{"model":"rec-chat","messages":[]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sqlmap/1.8")
	req.Header.Set("Authorization", "Bearer 8")
	r := do(t, req)
	if r.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", r.status)
	}
	client.CloseIdleConnections()
	access := string(awaitAccessEntries(t, accessLog, 1))
	t.Logf("%s", access)
	if !strings.Contains(access, "sqlmap/1.8") {
		t.Errorf("the 401's access log entry lost the caller's User-Agent, which holds no key")
	}
	if !strings.Contains(access, "probe=sqlmap-1.8") {
		t.Errorf("the 401's access log entry lost a query pair that holds no key")
	}
}
