package passthrough

import (
	"io"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/accounting"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
)

// Each request of a Message Batches create (an operator's endpoint POST /v1/messages/batches)
// gets the checks of a /v1/messages body: a model the key allows and the catalog serves, by one
// provider and by its own id; its own references only; public media URLs. A refused request is
// named by its place in the error's param and by its custom_id in the message. What passes goes
// to the provider of the requests' models, byte for byte.
func TestMessageBatchRequestsAreCheckedLikeMessages(t *testing.T) {
	mk := func(name, base string, modelMap map[string]string, models ...string) *providers.Provider {
		u, _ := url.Parse(base)
		return &providers.Provider{Name: name, BaseURL: u, APIKey: name + "-key", Models: models, ModelMap: modelMap}
	}
	cat, err := providers.NewCatalog([]*providers.Provider{
		mk("anthropic", "https://api.anthropic.example/v1", map[string]string{"claude-alias": "claude-sonnet"}, "claude-sonnet", "claude-haiku", "claude-opus", "claude-alias"),
		mk("ark", "https://ark.example.com/api/v3", nil, "doubao"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var extra []Endpoint
	for _, p := range []string{"/v1/messages/batches", "/anthropic/v1/messages/batches"} {
		ep, err := ParseEndpoint("POST", p)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, ep)
	}
	rt := &Router{Catalog: cat, Owners: ownersStore(t), Extra: extra, Logger: zap.NewNop()}
	acme := auth.Identity{Account: "acme", KeyID: "k", Models: []string{"claude-sonnet", "claude-haiku", "claude-alias", "doubao", "gpt-9"}}
	route := func(path, body string) (Route, *httptest.ResponseRecorder, error) {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		route, err := rt.Route(w, r, acme)
		if err == nil {
			defer route.Done()
			got, rerr := io.ReadAll(r.Body)
			if rerr != nil || string(got) != body {
				t.Fatalf("%s: the forwarded body is %q, %v", path, got, rerr)
			}
		}
		return route, w, err
	}
	req := func(customID, params string) string {
		return `{"custom_id":"` + customID + `","params":` + params + `}`
	}
	ok := `{"model":"claude-sonnet","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`
	batch := func(reqs ...string) string { return `{"requests":[` + strings.Join(reqs, ",") + `]}` }

	for _, tc := range []struct {
		name, body  string
		status      int
		code, param string
		messageHas  string // "" for no check
	}{
		{"a model the key may not use", batch(req("a", ok), req("b", `{"model":"claude-opus","max_tokens":9,"messages":[]}`)),
			403, "model_not_allowed", "requests[1].params.model", `requests[1] (custom_id "b")`},
		{"a model nobody serves", batch(req("a", `{"model":"gpt-9","max_tokens":9,"messages":[]}`)),
			404, "model_not_found", "requests[0].params.model", `custom_id "a"`},
		{"a model of another provider", batch(req("a", ok), req("b", `{"model":"doubao","max_tokens":9,"messages":[]}`)),
			400, "invalid_request_body", "requests[1].params.model", "one provider"},
		{"an alias", batch(req("a", `{"model":"claude-alias","max_tokens":9,"messages":[]}`)),
			400, "invalid_request_body", "requests[0].params.model", "alias"},
		{"a request without a model", batch(req("a", ok), req("b", `{"max_tokens":9,"messages":[]}`)),
			400, "missing_model", "requests[1].params.model", ""},
		{"a request without params", batch(req("a", ok), `{"custom_id":"b"}`),
			400, "missing_model", "requests[1].params.model", ""},
		{"a model that is not a string", batch(req("a", `{"model":7,"messages":[]}`)),
			400, "invalid_request_body", "requests[0].params.model", ""},
		{"a model in two letter cases", batch(req("a", `{"model":"claude-sonnet","Model":"claude-opus","messages":[]}`)),
			400, "invalid_request_body", "requests[0].params.model", ""},
		{"params in two letter cases", batch(`{"custom_id":"a","params":` + ok + `,"Params":{"model":"claude-opus"}}`),
			400, "invalid_request_body", "requests[0].params", ""},
		{"max_tokens in two letter cases", batch(req("a", `{"model":"claude-sonnet","max_tokens":9,"Max_Tokens":900000,"messages":[]}`)),
			400, "invalid_request_body", "requests[0].params.max_tokens", ""},
		{"no requests", `{"requests":[]}`, 400, "missing_model", "requests", ""},
		{"another account's container", batch(req("a", ok), req("b", `{"model":"claude-sonnet","max_tokens":9,"container":"cntr_x","messages":[]}`)),
			400, "invalid_request_body", "requests[1].params.container", `custom_id "b"`},
		{"a container object", batch(req("a", `{"model":"claude-sonnet","container":{"id":"cntr_x"},"messages":[]}`)),
			400, "invalid_request_body", "requests[0].params.container.id", ""},
		{"a custom skill", batch(req("a", `{"model":"claude-sonnet","container":{"skills":[{"type":"custom","skill_id":"skill_x"}]},"messages":[]}`)),
			400, "invalid_request_body", "requests[0].params.container.skills[0].skill_id", ""},
		{"a file", batch(req("a", `{"model":"claude-sonnet","messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_x"}}]}]}`)),
			400, "invalid_request_body", "requests[0].params.messages[0].content[0].source.file_id", ""},
		{"an internal image URL", batch(req("a", `{"model":"claude-sonnet","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://169.254.169.254/latest"}}]}]}`)),
			400, "invalid_request_body", "requests[0].params.messages[0].content[0].source.url", ""},
		{"requests as one object", `{"requests":{"custom_id":"a","params":{"model":"claude-opus","messages":[]}}}`,
			403, "model_not_allowed", "requests.params.model", ""},
		{"a nested array of requests", `{"requests":[[` + req("a", `{"model":"claude-opus","messages":[]}`) + `]]}`,
			403, "model_not_allowed", "requests[0][0].params.model", ""},
		{"an allowed top-level model beside a request's", `{"model":"claude-sonnet","requests":[` + req("a", `{"model":"claude-opus","messages":[]}`) + `]}`,
			403, "model_not_allowed", "requests[0].params.model", ""},
		{"an allowed top-level model beside a request's container", `{"model":"claude-sonnet","requests":[` + req("a", `{"model":"claude-sonnet","container":"cntr_x","messages":[]}`) + `]}`,
			400, "invalid_request_body", "requests[0].params.container", ""},
		{"a top-level model the key may not use", `{"model":"claude-opus","requests":[` + req("a", ok) + `]}`,
			403, "model_not_allowed", "model", ""},
	} {
		_, _, err := route("/v1/messages/batches", tc.body)
		e := wantError(t, err, tc.status, tc.code)
		if e.Param != tc.param || !strings.Contains(e.Message, tc.messageHas) {
			t.Fatalf("%s: param %q (%s); want %q, a message with %q", tc.name, e.Param, e.Message, tc.param, tc.messageHas)
		}
	}

	// What passes is routed by its requests' models to their provider, behind any prefix.
	for _, path := range []string{"/v1/messages/batches", "/anthropic/v1/messages/batches"} {
		haiku := strings.Replace(ok, "claude-sonnet", "claude-haiku", 1)
		body := batch(req("a", ok), req("b", haiku))
		r, _, err := route(path, body)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if r.Model != "claude-sonnet" || r.Provider.Name != "anthropic" {
			t.Fatalf("%s: routed to %s by %s", path, r.Provider.Name, r.Model)
		}
		// Each request is a call of its own model, sized by its own params (issue #27).
		want := []accounting.Call{
			{Model: "claude-sonnet", Request: billing.Request{BodyBytes: int64(len(ok)), MaxOutput: 9}},
			{Model: "claude-haiku", Request: billing.Request{BodyBytes: int64(len(haiku)), MaxOutput: 9}},
		}
		if !slices.Equal(r.Calls, want) {
			t.Fatalf("%s: calls %+v, want %+v", path, r.Calls, want)
		}
	}
	if _, err := ParseEndpoint("POST", "/v1/messages/batches/{model}"); err == nil {
		t.Fatal("a batch endpoint with {model} was accepted")
	}
}
