package models

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
)

func TestRetrieveAnswersOnlyTheKeysModels(t *testing.T) {
	u, _ := url.Parse("https://up.example.com/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{
		{Name: "p", BaseURL: u, Models: []string{"mine", "theirs", "org/with-slash", "tag:8b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Catalog: cat, Created: 42}
	key := auth.Identity{Models: []string{"mine", "org/*", "tag:*"}}
	serve := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r = r.WithContext(auth.WithIdentity(r.Context(), key))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for path, want := range map[string]string{
		"/v1/models/mine":             "mine",
		"/v1/models/org/with-slash":   "org/with-slash",
		"/v1/models/org%2Fwith-slash": "org/with-slash",
		"/v1/models/tag:8b":           "tag:8b",
		"/openai/v1/models/mine":      "mine",
	} {
		w := serve(path)
		var m Model
		if err := json.Unmarshal(w.Body.Bytes(), &m); w.Code != 200 || err != nil || m != (Model{ID: want, Object: "model", Created: 42, OwnedBy: "p"}) {
			t.Errorf("GET %s = %d %s, want the model %s", path, w.Code, w.Body, want)
		}
	}
	// A model the key may not use gets the answer of one that does not exist, but for its name.
	unknown := serve("/v1/models/nowhere")
	if unknown.Code != 404 {
		t.Fatalf("unknown model = %d %s", unknown.Code, unknown.Body)
	}
	var got struct {
		Error struct{ Message, Type, Param, Code string } `json:"error"`
	}
	if err := json.Unmarshal(unknown.Body.Bytes(), &got); err != nil || got.Error.Code != "model_not_found" || got.Error.Type != "not_found_error" || got.Error.Param != "model" {
		t.Fatalf("unknown model body %s: %v", unknown.Body, err)
	}
	forbidden := serve("/v1/models/theirs")
	want := `{"error":{"message":"the model theirs does not exist or this API key may not use it","type":"not_found_error","param":"model","code":"model_not_found"}}`
	if forbidden.Code != 404 || strings.TrimSpace(forbidden.Body.String()) != want {
		t.Errorf("a model the key may not use = %d %s, want 404 %s", forbidden.Code, forbidden.Body, want)
	}
	// A trailing slash names no model and is no endpoint (no SDK sends it): not the list.
	noEndpoint := `{"error":{"message":"no such endpoint","type":"not_found_error","param":"","code":"not_found"}}`
	if w := serve("/v1/models/"); w.Code != 404 || strings.TrimSpace(w.Body.String()) != noEndpoint {
		t.Errorf("GET /v1/models/ = %d %s, want 404 %s", w.Code, w.Body, noEndpoint)
	}
}

// TestOwnsLeavesModelMethodsToTheRoute keeps the OpenAI model retrieve apart from the
// generate-content protocol's calls on a model under /v1, and every path not below /v1/models,
// spelled exactly so, to the handler after it.
func TestOwnsLeavesModelMethodsToTheRoute(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		owns         bool
	}{
		{"GET", "/v1/models", true},
		{"POST", "/v1/models", true}, // answered 405
		{"GET", "/v1/models/gpt-4o-mini", true},
		{"HEAD", "/v1/models/gpt-4o-mini", true},
		{"GET", "/v1/models/tag:8b", true},
		{"DELETE", "/v1/models/gpt-4o-mini", true}, // answered 405
		{"POST", "/v1/models/gemini-x:generateContent", false},
		{"POST", "/v1/models/gemini-x:streamGenerateContent", false},
		{"POST", "/v1/models/gemini-x:countTokens", false},
		{"POST", "/v1/models/gemini-x:embedContent", false},
		{"POST", "/v1/models/gemini-x:batchEmbedContents", false},
		{"POST", "/v1beta/models/gemini-x:generateContent", false},
		// Without a matcher in front, only /v1/models and the paths below it, spelled exactly
		// so, are the handler's; the rest goes on (to mediagw_route, which answers it 404).
		{"GET", "/v1/models/", true}, // answered 404 not_found
		{"GET", "/v1/models/x/y", true},
		{"GET", "/v1/modelsX", false},
		{"GET", "/V1/MODELS", false},
		{"GET", "/v1/Models/gpt-4o-mini", false},
		{"GET", "//v1/models", false},
		{"GET", "/v1//models", false},
		{"GET", "/v1beta/models", false},
		{"GET", "/x/v1/models", false},
		{"GET", "/v1/chat/completions", false},
		{"POST", "/v1/chat/completions", false},
	} {
		r := httptest.NewRequest(tc.method, "/", nil)
		r.URL.Path = tc.path // as sent: httptest would read //v1/models as a host
		if got := Owns(r); got != tc.owns {
			t.Errorf("Owns(%s %s) = %v, want %v", tc.method, tc.path, got, tc.owns)
		}
	}
}
