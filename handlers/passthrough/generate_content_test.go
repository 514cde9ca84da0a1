package passthrough

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/providers"
)

// geminiBodies are bodies of each generate-content method as the Google Gen AI SDK sends them
// (a model's methods name it in the path; embeddings name it again in the body).
var geminiBodies = map[string]string{
	"generateContent":       `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	"streamGenerateContent": `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	"countTokens":           `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`,
	"embedContent":          `{"model":"models/gemini-pro","content":{"parts":[{"text":"hi"}]}}`,
	"batchEmbedContents":    `{"requests":[{"model":"models/gemini-pro","content":{"parts":[{"text":"a"}]}},{"model":"gemini-pro","content":{"parts":[{"text":"b"}]}}]}`,
}

// Every method of the generate-content protocol is served under /v1beta and /v1 alike, and goes
// to the provider's own base path with the provider's key in its place, the client's removed.
func TestGenerateContentFamilyUnderBothVersions(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, version := range []string{"v1beta", "v1"} {
		for _, method := range GenerateContentMethods {
			body := geminiBodies[method]
			path := "/" + version + "/models/gemini-pro:" + method
			r := httptest.NewRequest("POST", path+"?key=client-secret&alt=sse", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Goog-Api-Key", "client-secret")
			route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			route.Done()
			if want := "/v1beta/models/gemini-pro:" + method; r.URL.Path != want || route.Model != "gemini-pro" || route.Provider.Name != "gemini" {
				t.Errorf("%s -> %s (model %q), want %s", path, r.URL.Path, route.Model, want)
			}
			if r.Header.Get("X-Goog-Api-Key") != "gemini-key" || r.URL.RawQuery != "alt=sse" {
				t.Errorf("%s: X-Goog-Api-Key %q, query %q", path, r.Header.Get("X-Goog-Api-Key"), r.URL.RawQuery)
			}
			if got, _ := io.ReadAll(r.Body); string(got) != body {
				t.Errorf("%s: body %q changed to %q", path, body, got)
			}
		}
	}
}

// The key's model allow-list and the catalog decide under /v1 as under /v1beta.
func TestGenerateContentModelChecksUnderV1(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, version := range []string{"v1beta", "v1"} {
		route := func(model string, id auth.Identity) error {
			r := httptest.NewRequest("POST", "/"+version+"/models/"+model+":generateContent", strings.NewReader(geminiBodies["generateContent"]))
			r.Header.Set("Content-Type", "application/json")
			rt, err := rt.Route(httptest.NewRecorder(), r, id)
			if err == nil {
				rt.Done()
			}
			return err
		}
		wantError(t, route("gemini-pro", auth.Identity{Account: "a", Models: []string{"doubao"}}), 403, "model_not_allowed")
		wantError(t, route("gemini-nope", auth.Identity{Account: "a"}), 404, "model_not_found")
		if err := route("gemini-pro", auth.Identity{Account: "a", Models: []string{"gemini-*"}}); err != nil {
			t.Errorf("%s: an allowed model: %v", version, err)
		}
	}
}

// A body may name no model but the path's, the one that was checked and routed by: whichever
// model an upstream reads from the body is one the key may use.
func TestGenerateContentBodyModelsMustBeThePaths(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, tc := range []struct{ method, body, param string }{
		{"embedContent", `{"model":"models/doubao","content":{"parts":[{"text":"hi"}]}}`, "model"},
		{"embedContent", `{"model":"doubao"}`, "model"},
		{"embedContent", `{"model":7}`, "model"},
		{"batchEmbedContents", `{"requests":[{"model":"models/gemini-pro"},{"model":"models/doubao"}]}`, "requests[1].model"},
		{"batchEmbedContents", `{"requests":[{"Model":"models/doubao"}]}`, "requests[0].Model"},
		{"batchEmbedContents", `{"requests":[{"model":"models/gemini-pro","MODEL":"models/doubao"}]}`, "requests[0].MODEL"},
		{"batchEmbedContents", `{"requests":{"model":"models/doubao"}}`, "requests.model"},
		{"batchEmbedContents", `{"requests":[{"model":null}]}`, "requests[0].model"},
		{"countTokens", `{"generateContentRequest":{"model":"models/doubao","contents":[]}}`, "generateContentRequest.model"},
		{"countTokens", `{"generate_content_request":{"model":"models/doubao","contents":[]}}`, "generate_content_request.model"},
		{"generateContent", `{"model":"models/doubao","contents":[]}`, "model"},
		{"generateContent", `{"model":"models/gemini-pro/../doubao","contents":[]}`, "model"},
	} {
		for _, version := range []string{"v1beta", "v1"} {
			r := httptest.NewRequest("POST", "/"+version+"/models/gemini-pro:"+tc.method, strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "application/json")
			_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
			if e := wantError(t, err, 400, "invalid_request_body"); e.Param != tc.param {
				t.Errorf("%s %s: param %q, want %q (%s)", version, tc.body, e.Param, tc.param, e.Message)
			}
		}
	}
	// A model named in a function call's arguments or a schema is content, not a choice of model.
	for method, body := range map[string]string{
		"generateContent":    `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{"model":"doubao"}}}]}]}`,
		"countTokens":        `{"generateContentRequest":{"model":"models/gemini-pro","contents":[{"parts":[{"text":"x"}]}]}}`,
		"batchEmbedContents": `{"requests":[{"model":"models/gemini-pro","content":{"parts":[{"text":"model"}]}}]}`,
	} {
		r := httptest.NewRequest("POST", "/v1/models/gemini-pro:"+method, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err != nil {
			t.Errorf("%s %s: %v", method, body, err)
			continue
		}
		route.Done()
	}
}

// The references a generate-content body may make (cached contents, Files API files) must be the
// caller's own under /v1 too.
func TestGenerateContentReferencesUnderV1(t *testing.T) {
	rt := &Router{Catalog: catalog(t), Owners: ownersStore(t), Logger: zap.NewNop()}
	for _, tc := range []struct{ method, body, param string }{
		{"generateContent", `{"cachedContent":"cachedContents/theirs","contents":[]}`, "cachedContent"},
		{"countTokens", `{"generateContentRequest":{"model":"models/gemini-pro","cachedContent":"cachedContents/x"}}`, "generateContentRequest.cachedContent"},
		{"streamGenerateContent", `{"contents":[{"parts":[{"fileData":{"fileUri":"files/abc"}}]}]}`, "contents[0].parts[0].fileData.fileUri"},
		{"batchEmbedContents", `{"requests":[{"model":"models/gemini-pro","content":{"parts":[{"file_data":{"file_uri":"gs://b/o"}}]}}]}`, "requests[0].content.parts[0].file_data.file_uri"},
	} {
		r := httptest.NewRequest("POST", "/v1/models/gemini-pro:"+tc.method, strings.NewReader(tc.body))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if e := wantError(t, err, 400, "invalid_request_body"); e.Param != tc.param {
			t.Errorf("%s %s: param %q, want %q (%s)", tc.method, tc.body, e.Param, tc.param, e.Message)
		}
	}
}

// A model the operator maps to another id upstream is rewritten in the path; a body that names it
// again could not be, so it is refused rather than sent with two different models.
func TestGenerateContentAliasIsRewrittenInThePathOnly(t *testing.T) {
	u, _ := url.Parse("https://g.example.com/v1beta")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "gemini", BaseURL: u, APIKey: "gemini-key", AuthStyle: providers.AuthGoogAPIKey,
		Models: []string{"gemini-pro"}, ModelMap: map[string]string{"gemini-pro": "gemini-pro-002"}}})
	if err != nil {
		t.Fatal(err)
	}
	rt := &Router{Catalog: cat}
	route := func(method, body string) (*http.Request, error) {
		r := httptest.NewRequest("POST", "/v1/models/gemini-pro:"+method, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err == nil {
			route.Done()
		}
		return r, err
	}
	r, err := route("generateContent", geminiBodies["generateContent"])
	if err != nil || r.URL.Path != "/v1beta/models/gemini-pro-002:generateContent" {
		t.Fatalf("aliased generateContent -> %s, %v", r.URL.Path, err)
	}
	_, err = route("batchEmbedContents", geminiBodies["batchEmbedContents"])
	if e := wantError(t, err, 400, "invalid_request_body"); e.Param != "model" || !strings.Contains(e.Message, "alias") {
		t.Fatalf("aliased batchEmbedContents: %v", e)
	}
}

// FuzzCheckBodyModels checks checkBodyModels against encoding/json, which matches keys as a
// lenient upstream may (any letter case): a body it accepts names no other model than the
// path's, in any place the protocol reads one.
func FuzzCheckBodyModels(f *testing.F) {
	for _, body := range geminiBodies {
		f.Add(body)
	}
	f.Add(`{"MODEL":"models/other"}`)
	f.Add(`{"generateContentRequest":{"Model":"x"}}`)
	f.Add(`{"requests":[{"model":"models/gemini-pro"},{"mOdel":"other"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return // the router passes only bodies it read as JSON
		}
		if _, err := checkBodyModels([]byte(body), "gemini-pro"); err != nil {
			return
		}
		type named struct {
			Model any `json:"model"`
		}
		var read struct {
			named
			GenerateContentRequest named   `json:"generateContentRequest"`
			Requests               []named `json:"requests"`
		}
		if json.Unmarshal([]byte(body), &read) != nil {
			return // not an object of that shape: no upstream reads a model from it either
		}
		for _, n := range append(read.Requests, read.named, read.GenerateContentRequest) {
			if n.Model != nil && n.Model != "gemini-pro" && n.Model != "models/gemini-pro" {
				t.Fatalf("%s: accepted with model %v", body, n.Model)
			}
		}
	})
}
