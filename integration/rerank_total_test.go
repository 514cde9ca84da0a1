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
	up := startVoyageRerank(t)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": usageLog})
	r := call(t, "POST", base+"/v1/rerank", "mg-count", voyageRerankBody())
	if r.status != 200 {
		t.Fatalf("rerank = %d %s", r.status, r.body)
	}
	// 100 documents × (100 query tokens + 1) = 10,100 tokens, at 1000 per million: 10.1.
	if got := settledSince(t, g, "count", 0); got != 10_100_000 {
		t.Errorf("a rerank reporting usage.total_tokens 10100 was charged %s, want 10.1 (the tokens it reports)", money.Format(got))
	}
}

// voyageRerankBody is a rerank of 100 one-byte documents against a 400-byte query: Voyage counts
// it 100 × (100 + 1) = 10,100 tokens, where its 844-byte body is 211 tokens.
func voyageRerankBody() map[string]any {
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = "a"
	}
	return map[string]any{"model": "p-embed", "query": strings.Repeat("word ", 80), "documents": docs}
}

// startVoyageRerank is a fake of Voyage's POST /v1/rerank (under /oa/v1), answering with its
// usage.total_tokens counted by Voyage's rule, at one token per 4 bytes of text.
func startVoyageRerank(t *testing.T) *httptest.Server {
	t.Helper()
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
	t.Cleanup(up.Close)
	return up
}

// TestRerankHoldCoversWhatItIsCharged: a rerank's provider counts its query once per document, so
// a hold of its body's tokens (0.211 here) is far below the 10.1 it is charged. An account
// credited 5 took that hold, was charged 10.1 and went to -5.1, by (documents − 1) × query tokens
// for each such rerank in flight. Held what the settlement can reach (query tokens × documents +
// the body's), the rerank does not fit the balance: 402, nothing sent, the balance stays 5.
func TestRerankHoldCoversWhatItIsCharged(t *testing.T) {
	up := startVoyageRerank(t)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, g := startSimGateway(t, countTokensCaddyfile, map[string]string{"up": up.URL, "usage_log": usageLog})
	keys := keysEnv{g: g, base: base}
	keys.credit(t, "count", "5", "count-1")
	if r := call(t, "POST", base+"/v1/rerank", "mg-count", voyageRerankBody()); r.status != 402 {
		t.Errorf("a rerank its provider counts at 10.1 against a balance of 5 = %d %s; want 402", r.status, r.body)
	}
	if r := keys.admin(t, "GET", "/mediagw/accounts/count/balance", nil); r.field("balance") != "5" {
		t.Errorf("balance after the rerank: %s; want 5, never below zero", r.body)
	}
	// Credited past the hold, it is charged what its provider reports.
	keys.credit(t, "count", "10", "count-2")
	if r := call(t, "POST", base+"/v1/rerank", "mg-count", voyageRerankBody()); r.status != 200 {
		t.Fatalf("rerank with a balance of 15 = %d %s", r.status, r.body)
	}
	if r := keys.admin(t, "GET", "/mediagw/accounts/count/balance", nil); r.field("balance") != "4.9" {
		t.Errorf("balance after the rerank: %s; want 4.9 (15 less the 10.1 reported)", r.body)
	}
}
