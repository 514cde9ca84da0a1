package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/internal/money"
)

// TestRerankIsChargedTheTotalItReports: a rerank is input-only (usedFor), "settled at the
// input tokens its answer reports". Voyage's POST /v1/rerank (and OpenRouter's rerank) report
// their count as usage.total_tokens alone, and bill "the number of query tokens × the number of
// documents + the sum of the tokens of all documents": the query is read once per document, so
// the count is not the body's length. The fake answers as Voyage's reference does, with the
// tokens counted by that rule (one token per 4 bytes of text). The gateway must charge the
// 10,100 tokens reported (10.1 at 1000 per million), not one token per 4 bytes of its body.
func TestRerankIsChargedTheTotalItReports(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q struct {
			Query     string   `json:"query"`
			Documents []string `json:"documents"`
			Model     string   `json:"model"`
		}
		if r.URL.Path != "/oa/v1/rerank" || json.NewDecoder(r.Body).Decode(&q) != nil {
			w.WriteHeader(404)
			return
		}
		total := 0
		for _, d := range q.Documents {
			total += len(q.Query)/4 + max(len(d)/4, 1)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object": "list", "data": [{"relevance_score": 0.4, "index": 0}], "model": %q, "usage": {"total_tokens": %d}}`, q.Model, total)
	}))
	defer up.Close()
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": usageLog})
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = "a"
	}
	body := map[string]any{"model": "p-embed", "query": strings.Repeat("word ", 80), "documents": docs}
	r := call(t, "POST", base+"/v1/rerank", "mg-count", body)
	if r.status != 200 {
		t.Fatalf("rerank = %d %s", r.status, r.body)
	}
	// 100 documents × (100 query tokens + 1) = 10,100 tokens, at 1000 per million: 10.1.
	if got := settledSince(t, g, "count", 0); got != 10_100_000 {
		t.Errorf("a rerank reporting usage.total_tokens 10100 was charged %s, want 10.1 (the tokens it reports)", money.Format(got))
	}
}
