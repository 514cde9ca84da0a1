package passthrough

import (
	"io"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
)

// toolCatalog serves doubao and the image models the tools of these tests name, at one provider.
func toolCatalog(t testing.TB) *providers.Catalog {
	t.Helper()
	u, _ := url.Parse("https://ark.example.com/api/v3")
	c, err := providers.NewCatalog([]*providers.Provider{{Name: "ark", BaseURL: u, APIKey: "ark-key",
		Models: []string{"doubao", "image-ok", "image-dear", "img", "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestToolModelsMustBeAllowed sends Responses bodies whose image_generation tool names a model:
// the upstream runs it, so the key must allow it as it allows the request's model, and the
// gateway must serve it (else its images would run unpriced: 404 model_not_found).
func TestToolModelsMustBeAllowed(t *testing.T) {
	rt := &Router{Catalog: toolCatalog(t)}
	id := auth.Identity{Account: "a", Models: []string{"doubao", "image-ok"}}
	for _, tc := range []struct {
		tools  string
		status int
		param  string
	}{
		{`[{"type":"image_generation","model":"image-dear"}]`, 403, "tools[0].model"},
		{`[{"type":"web_search"},{"type":"image_generation","model":"image-dear"}]`, 403, "tools[1].model"},
		{`{"type":"image_generation","model":"image-dear"}`, 403, "tools[0].model"},
		{`[{"type":"image_generation","model":"image-ok","Model":"image-dear"}]`, 400, "tools[0].model"},
		{`[{"type":"image_generation","model":"image-ok","model":"image-dear"}]`, 400, "tools[0].model"},
		{`[{"type":"image_generation","mod\u0065l":"image-dear"}]`, 403, "tools[0].model"},
		{`[{"type":"image_generation","model":7}]`, 400, "tools[0].model"},
		{`[{"type":"image_generation","size":"1024x1024","size":"4096x4096"}]`, 400, "tools[0].size"},
		{`[{"type":"image_generation","model":"image-ok"}]`, 0, ""},
		// With no model the provider runs its default image model: a restricted key must name one.
		{`[{"type":"image_generation"}]`, 403, "tools[0].model"},
		{`[{"type":"web_search"},{"type":"image_generation","model":null},"x",3]`, 403, "tools[1].model"},
		{`[{"type":"image_generation","Type":"x"}]`, 400, "tools[0].type"},
		{`[{"type":"web_search"},"x",3]`, 0, ""},
	} {
		body := `{"model":"doubao","input":"draw","tools":` + tc.tools + `}`
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, id)
		if tc.status == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.tools, err)
			} else {
				route.Done()
			}
			continue
		}
		if e := wantError(t, err, tc.status, ""); e.Param != tc.param {
			t.Errorf("%s: %v, param %q, want %q", tc.tools, e, e.Param, tc.param)
		}
	}
	// A key that may use every model may leave the image model to the provider.
	every := auth.Identity{Account: "a"}
	r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","input":"draw","tools":[{"type":"image_generation"}]}`))
	r.Header.Set("Content-Type", "application/json")
	if route, err := rt.Route(httptest.NewRecorder(), r, every); err != nil {
		t.Errorf("an every-model key's image tool without a model: %v", err)
	} else {
		route.Done()
	}
	// Tools spelled "Tools" next to "tools" are refused as any case variant of a checked field.
	r = httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","tools":[],"Tools":[{"type":"image_generation","model":"image-dear"}]}`))
	r.Header.Set("Content-Type", "application/json")
	_, err := rt.Route(httptest.NewRecorder(), r, id)
	wantError(t, err, 400, "invalid_request_body")
	// A model no provider serves is not found, for a key that may use every model too.
	r = httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","tools":[{"type":"image_generation","model":"img"},{"type":"image_generation","model":"image-unserved"}]}`))
	r.Header.Set("Content-Type", "application/json")
	_, err = rt.Route(httptest.NewRecorder(), r, every)
	if e := wantError(t, err, 404, "model_not_found"); e.Param != "tools[1].model" {
		t.Errorf("an unserved tool model: param %q", e.Param)
	}
}

// TestToolImagesAreSized: the image_generation tools of a Responses body are held for their
// model (the provider's tool_image_model, else OpenAI's default, where the tool names none), size
// and quality, max_tool_calls images each (a number or a string holding one), else one, and
// bounded by max_tool_calls; other tools are not images.
func TestToolImagesAreSized(t *testing.T) {
	rt := &Router{Catalog: toolCatalog(t)}
	every := auth.Identity{Account: "a"}
	for _, tc := range []struct {
		body string
		want []billing.ToolImages
	}{
		{`"tools":[{"type":"web_search"}]`, nil},
		{`"tools":[{"type":"image_generation"}]`, []billing.ToolImages{{Model: billing.DefaultToolImageModel, Count: 1}}},
		{`"tools":[{"type":"web_search"},{"type":"image_generation","model":"img","size":"1024x1536","quality":"high"}],"max_tool_calls":4`,
			[]billing.ToolImages{{Model: "img", Size: "1024x1536", Quality: "high", Count: 4, MaxCalls: 4}}},
		{`"tools":{"type":"image_generation","size":7,"quality":"auto"},"max_tool_calls":"3"`,
			[]billing.ToolImages{{Model: billing.DefaultToolImageModel, Quality: "auto", Count: 3, MaxCalls: 3}}},
		{`"tools":[{"type":"image_generation"}],"max_tool_calls":0`, []billing.ToolImages{{Model: billing.DefaultToolImageModel, Count: 1}}},
	} {
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","input":"draw",`+tc.body+`}`))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, every)
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		route.Done()
		if !slices.Equal(route.ToolImages, tc.want) {
			t.Errorf("%s: tool images %+v, want %+v", tc.body, route.ToolImages, tc.want)
		}
	}
	// A provider may name the image model it runs for a tool that names none.
	c := catalog(t)
	p, _ := c.Provider("ark")
	p.ToolImageModel = "seedream"
	rt = &Router{Catalog: c}
	r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","tools":[{"type":"image_generation"}],"Max_tool_calls":2}`))
	r.Header.Set("Content-Type", "application/json")
	if _, err := rt.Route(httptest.NewRecorder(), r, every); err == nil {
		t.Fatal("max_tool_calls spelt in another case was not refused")
	}
	r = httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","tools":[{"type":"image_generation"}]}`))
	r.Header.Set("Content-Type", "application/json")
	route, err := rt.Route(httptest.NewRecorder(), r, every)
	if err != nil {
		t.Fatal(err)
	}
	route.Done()
	if want := []billing.ToolImages{{Model: "seedream", Count: 1}}; !slices.Equal(route.ToolImages, want) {
		t.Errorf("tool images %+v, want %+v", route.ToolImages, want)
	}
}

// TestToolsReachTheUpstreamAsSent: reading a Responses body's tools leaves the body byte for
// byte as the client sent it. (Decoding the tools into a list that began as the tools' own bytes
// wrote the first tool over the body: [{"type":"image_generation"}] reached the upstream as
// {"type":"image_generation"}}], which it refuses.)
func TestToolsReachTheUpstreamAsSent(t *testing.T) {
	rt := &Router{Catalog: toolCatalog(t)}
	for _, body := range []string{
		`{"model":"doubao","input":"draw","tools":[{"type":"image_generation"}]}`,
		`{"model":"doubao","tools":[{"type":"function","name":"f","parameters":{}},{"type":"image_generation","model":"x"}],"input":"hi"}`,
		`{"model":"doubao","tools":{"type":"image_generation"}}`,
	} {
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		forwarded, _ := io.ReadAll(r.Body)
		route.Done()
		if string(forwarded) != body {
			t.Errorf("sent %s, forwarded %s", body, forwarded)
		}
	}
}

// TestAddedResponsesEndpointsCheckToolModels: an endpoint the operator adds that extends
// Responses (a responses segment: /openai/v1/responses, /v1/responses/compact) reads its tools as
// POST /v1/responses does: a tool's model must be one the key allows, and its images are held.
func TestAddedResponsesEndpointsCheckToolModels(t *testing.T) {
	var extra []Endpoint
	for _, path := range []string{"/openai/v1/responses", "/v1/responses/compact"} {
		ep, err := ParseEndpoint("POST", path)
		if err != nil {
			t.Fatal(err)
		}
		extra = append(extra, ep)
	}
	rt := &Router{Catalog: catalog(t), Extra: extra}
	restricted := auth.Identity{Account: "a", Models: []string{"doubao"}}
	for _, path := range []string{"/openai/v1/responses", "/v1/responses/compact"} {
		r := httptest.NewRequest("POST", path, strings.NewReader(`{"model":"doubao","tools":[{"type":"image_generation","model":"image-dear"}]}`))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, restricted)
		if e := wantError(t, err, 403, "model_not_allowed"); e.Param != "tools[0].model" {
			t.Errorf("%s: %v", path, e)
		}
		r = httptest.NewRequest("POST", path, strings.NewReader(`{"model":"doubao","tools":[{"type":"image_generation","model":"doubao"}]}`))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, restricted)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		route.Done()
		if want := []billing.ToolImages{{Model: "doubao", Count: 1}}; !slices.Equal(route.ToolImages, want) {
			t.Errorf("%s: tool images %+v, want %+v", path, route.ToolImages, want)
		}
	}
}

// TestBackgroundResponse: background is read as a lenient upstream reads a boolean.
func TestBackgroundResponse(t *testing.T) {
	for raw, want := range map[string]bool{`true`: true, `1`: true, `"true"`: true, `"True"`: true, `"yes"`: true, `" on "`: true,
		`1.0`: true, `1e0`: true, `10E-1`: true, `1.000`: true,
		`false`: false, `2`: false, `0.5`: false, `-1`: false, `1.5e0`: false, `0`: false, `null`: false, ``: false, `"false"`: false, `"no"`: false, `{}`: false} {
		if got := backgroundResponse([]byte(raw)); got != want {
			t.Errorf("background %s: %v, want %v", raw, got, want)
		}
	}
	bounded := []billing.ToolImages{{Count: 2, MaxCalls: 2}}
	unbounded := []billing.ToolImages{{Count: 1}}
	for _, c := range []struct {
		background bool
		images     []billing.ToolImages
		refused    bool
	}{{false, unbounded, false}, {true, bounded, false}, {true, unbounded, true}, {true, []billing.ToolImages{{Count: 0}}, false}, {true, nil, false}} {
		if err := backgroundImagesBounded(c.background, c.images); (err != nil) != c.refused {
			t.Errorf("background %v, %+v: %v", c.background, c.images, err)
		}
	}
}
