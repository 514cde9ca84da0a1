package upstream

import (
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestCompressedAnswerTakesItsOwnLength: one answer takes about its own length of the budget,
// whatever buffer it is read into. A provider that compresses its answer (Go's transport asks
// for gzip and decodes it, dropping Content-Length) has its answer read into a buffer that
// doubles; counting the buffer, a 33 MiB answer would take 64 MiB and, with the account's other
// edit waiting on its provider (its 64 KiB reservation), be refused as past its 64 MiB share
// (ErrPastShareAnswered: an edit's 502 charged).
func TestCompressedAnswerTakesItsOwnLength(t *testing.T) {
	long := `{"data":[{"b64_json":"` + strings.Repeat("iVBO", (33<<20)/4) + `"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			t.Error("the gateway's client does not ask for gzip: this test reads nothing")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		_, _ = zw.Write([]byte(long))
		_ = zw.Close()
	}))
	defer srv.Close()
	budget := NewAnswerBudget(256<<20, 64<<20)
	pending, ok := budget.Reserve("a", 64<<10) // the account's other edit, waiting on its provider
	if !ok {
		t.Fatal("reservation refused")
	}
	defer pending.Release()
	c := Client{HTTP: NewHTTPClient(ClientOptions{}), Logger: zap.NewNop(), MaxAnswer: 64 << 20, Budget: budget, Account: "a"}
	ans, err := c.Call(context.Background(), budgetProvider(t, srv), http.MethodGet, "x", nil)
	if err != nil {
		t.Fatalf("an answer of %d MiB, the account holding 64 KiB else of its 64 MiB share: %v (past share: %v)", len(long)>>20, err, errors.Is(err, ErrPastShareAnswered))
	}
	defer ans.Release()
	if held := budget.Held(); held > int64(len(long))+(1<<20) {
		t.Errorf("an answer of %d bytes holds %d", len(long), held)
	}
}
