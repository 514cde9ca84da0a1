package passthrough

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
)

// TestToolModelsMustBeAllowed sends Responses bodies whose image_generation tool names a model:
// the upstream runs it, so the key must allow it as it allows the request's model.
func TestToolModelsMustBeAllowed(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
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
}
