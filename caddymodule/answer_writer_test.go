package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestAnswerWriterForTakesTheObservedOnesOnce: mediagw_route's answer writer is the one its
// observed writer keeps, once; a second route on the same request, or a writer that is not the
// observed one, gets a new one. Each writes through to the writer it was given.
func TestAnswerWriterForTakesTheObservedOnesOnce(t *testing.T) {
	rec := httptest.NewRecorder()
	o := &observer{}
	ow := o.begin(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil), nil)
	first := answerWriterFor(ow)
	if first != &ow.answer {
		t.Fatal("the first answer writer is not the observed writer's")
	}
	if second := answerWriterFor(ow); second == first || second == &ow.answer {
		t.Fatal("a second answer writer shares the first")
	}
	if other := answerWriterFor(rec); other == &ow.answer {
		t.Fatal("a writer that is not the observed one got its answer writer")
	}
	first.Header().Set("Content-Type", "application/json")
	first.Header().Set("Set-Cookie", "lb=1")
	if _, err := first.Write([]byte(`{"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`)); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || ow.status != http.StatusOK || first.status != http.StatusOK || rec.Header().Get("Set-Cookie") != "" {
		t.Fatalf("status %d/%d/%d, Set-Cookie %q", rec.Code, ow.status, first.status, rec.Header().Get("Set-Cookie"))
	}
	if tokens := first.sniffer.Seen(false); tokens.Prompt != 3 || tokens.Completion != 4 {
		t.Fatalf("tokens %+v", tokens)
	}
}

// requestReplacer gives the replacer mediagw_auth kept on the observed writer, and the request
// context's otherwise (another writer, or an observed one before mediagw_auth kept any).
func TestRequestReplacerIsTheRequests(t *testing.T) {
	repl := caddy.NewReplacer()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
	rec := httptest.NewRecorder()
	ow := (&observer{}).begin(rec, r, nil)
	if got := requestReplacer(ow, r); got != repl {
		t.Fatal("an observed writer without a kept replacer: not the context's")
	}
	if got := requestReplacer(rec, r); got != repl {
		t.Fatal("another writer: not the context's replacer")
	}
	kept := caddy.NewReplacer()
	ow.repl = kept
	if got := requestReplacer(ow, r); got != kept {
		t.Fatal("the observed writer's kept replacer was not used")
	}
}

// An answer writer that counts the answer's images and reads its tool's images (a request whose
// hold pays for both) reads each from the same bytes, and one that does neither reads none:
// both live in one imageReader, made only for such a request.
func TestAnswerWriterReadsImagesOnlyWhenAsked(t *testing.T) {
	answer := []byte(`{"status":"completed","data":[{"b64_json":"a"},{"b64_json":"b"}],"output":[{"type":"image_generation_call","id":"ig_1","status":"completed","size":"1024x1024","quality":"low","result":"x"}],"usage":{"input_tokens":1,"output_tokens":2}}`)
	write := func(w *answerWriter) {
		w.Header().Set("Content-Type", "application/json")
		half := len(answer) / 2
		for _, part := range [][]byte{answer[:half], answer[half:]} {
			if _, err := w.Write(part); err != nil {
				t.Fatal(err)
			}
		}
	}
	both := newAnswerWriter(httptest.NewRecorder())
	both.countImages()
	both.readToolImages()
	write(both)
	if n, seen := both.imageCounts().items.Count(); n != 2 || !seen {
		t.Errorf("counted %d images (seen %v), want 2", n, seen)
	}
	if made := both.madeImages(); !made.Reported || len(made.Images) != 1 || made.Images[0].Size != "1024x1024" || made.Images[0].Quality != "low" {
		t.Errorf("tool images %+v", made)
	}

	tool := newAnswerWriter(httptest.NewRecorder())
	tool.readToolImages()
	write(tool)
	if tool.imageCounts() != nil || len(tool.madeImages().Images) != 1 {
		t.Errorf("a writer reading only its tool's images: counts %v, tool images %+v", tool.imageCounts(), tool.madeImages())
	}

	neither := newAnswerWriter(httptest.NewRecorder())
	write(neither)
	if neither.images != nil || neither.imageCounts() != nil || neither.toolImages() != nil || neither.madeImages().Reported {
		t.Error("a writer asked for no images read some")
	}
}
