package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
	"github.com/mediagw/mediagw/handlers/upstream"
	"github.com/mediagw/mediagw/storage"
)

// Store operations and upstream calls made while serving a traced request are child spans of
// the request's span; without a span in the context nothing is recorded.
func TestStoreAndUpstreamSpansJoinTheRequestTrace(t *testing.T) {
	db, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store := &tracedStore{Store: db, backend: "badger"}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer up-key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"cgt-1"}`))
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/api/v3")
	p := &providers.Provider{Name: "ark", BaseURL: base, APIKey: "up-key"}

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())

	// Untraced: nothing recorded.
	if _, _, err := store.AddCounter(context.Background(), "c", 1, -1); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans without a request span", n)
	}

	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	if _, _, err := store.AddCounter(ctx, "c", 1, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Task(ctx, "missing"); err == nil {
		t.Fatal("a missing task was found")
	}
	client := upstream.Client{HTTP: up.Client(), Logger: zap.NewNop()}
	if ans, err := client.Call(ctx, p, http.MethodPost, "contents/generations/tasks", []byte(`{}`)); err != nil || !ans.OK() {
		t.Fatalf("call = %+v, %v", ans, err)
	}
	parent.End()

	names := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		names[s.Name()] = s
	}
	for _, name := range []string{"store AddCounter", "store Task", "upstream ark"} {
		s, ok := names[name]
		if !ok {
			t.Fatalf("no span %q among %v", name, names)
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("span %q is not a child of the request span", name)
		}
	}
	if names["store Task"].Status().Code.String() != "Error" {
		t.Errorf("a failed store read is not marked as an error: %v", names["store Task"].Status())
	}
	for _, a := range names["upstream ark"].Attributes() {
		if v := a.Value.Emit(); v == up.URL || v == "up-key" {
			t.Errorf("the upstream span carries %s=%s", a.Key, v)
		}
	}
}
