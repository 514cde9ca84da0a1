package passthrough

import (
	"encoding/json"
	"maps"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/handlers/billing"
	"github.com/mediagw/mediagw/handlers/providers"
)

// TestToolModelsAreMappedInPlace: a tool's model that the provider's model_map names is replaced
// in place, every other byte as sent (white space, order, escapes, other tools, a top-level
// model the map leaves alone); a tool naming an unmapped model, or none, leaves the body as it was.
func TestToolModelsAreMappedInPlace(t *testing.T) {
	upstream := func(m string) string {
		if m == "studio" {
			return "img-2025"
		}
		return m
	}
	for _, tc := range []struct{ in, want string }{
		{`{"model":"studio","tools":[{"type":"image_generation","model":"studio"}]}`,
			`{"model":"studio","tools":[{"type":"image_generation","model":"img-2025"}]}`},
		{"{ \"tools\" : [ 3, \"x\", {\"type\":\"function\",\"name\":\"f\",\"parameters\":{\"model\":\"studio\"}} ,\n {\"mod\\u0065l\" :  \"stu\\u0064io\", \"size\":\"auto\"} ] , \"input\":\"studio\"}",
			"{ \"tools\" : [ 3, \"x\", {\"type\":\"function\",\"name\":\"f\",\"parameters\":{\"model\":\"studio\"}} ,\n {\"mod\\u0065l\" :  \"img-2025\", \"size\":\"auto\"} ] , \"input\":\"studio\"}"},
		{`{"tools":{"type":"image_generation","model":"studio"}}`, `{"tools":{"type":"image_generation","model":"img-2025"}}`},
		{`{"tools":[{"type":"image_generation","model":"other"},{"type":"image_generation"}]}`,
			`{"tools":[{"type":"image_generation","model":"other"},{"type":"image_generation"}]}`},
		{`{"tools":null,"model":"studio"}`, `{"tools":null,"model":"studio"}`},
	} {
		got, ok := replaceToolModels([]byte(tc.in), upstream)
		if !ok || string(got) != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := replaceToolModels([]byte(`[1]`), upstream); ok {
		t.Error("a list was read as a body")
	}
}

// TestToolChoiceBoundsHeldImages: a tool_choice that keeps the model from calling the
// image_generation tool holds none of its images; one that lets it, or that cannot be read
// unambiguously, holds max_tool_calls (or one); a repeated tool_choice key is refused.
func TestToolChoiceBoundsHeldImages(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	for _, tc := range []struct {
		choice string
		held   int64
	}{
		{`"none"`, 0},
		{`"non\u0065"`, 0},
		{`{"type":"function","name":"lookup"}`, 0},
		{`{"type":"web_search_preview"}`, 0},
		{`{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"lookup"}]}`, 0},
		{`{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"lookup"},{"type":"image_generation"}]}`, 2},
		{`{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","type":"image_generation"}]}`, 2},
		{`{"type":"function","Type":"image_generation"}`, 2},
		{`{"type":"image_generation"}`, 2},
		{`"auto"`, 2},
		{`"required"`, 2},
		{`null`, 2},
		{`7`, 2},
	} {
		body := `{"model":"doubao","input":"draw","max_tool_calls":2,"tool_choice":` + tc.choice + `,"tools":[{"type":"function","name":"lookup"},{"type":"image_generation"}]}`
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		if err != nil {
			t.Fatalf("%s: %v", tc.choice, err)
		}
		route.Done()
		want := []billing.ToolImages{{Model: billing.DefaultToolImageModel, Count: tc.held, MaxCalls: 2}}
		if got, _ := json.Marshal(route.ToolImages); string(got) != string(must(json.Marshal(want))) {
			t.Errorf("tool_choice %s: %s, want %d held", tc.choice, got, tc.held)
		}
	}
	body := `{"model":"doubao","input":"draw","tool_choice":"auto","tool_choice":"none","tools":[{"type":"image_generation"}]}`
	r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	_, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
	if e := wantError(t, err, 400, "invalid_request_body"); e.Param != "tool_choice" {
		t.Errorf("a repeated tool_choice: %v, param %q", e, e.Param)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// An answer shows a tool's model under the client's id on the Responses endpoints: a create's
// under the id it named (of two that map to one upstream id), a response's later calls under the
// first of them; a create naming no tool model and other endpoints show none.
func TestAnswerToolModels(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1/v1")
	cat, err := providers.NewCatalog([]*providers.Provider{{Name: "oa", BaseURL: u, APIKey: "k",
		ModelMap: map[string]string{"studio-b": "img-up", "studio-a": "img-up", "chat": "chat-up"}}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := cat.ProviderFor("chat")
	for _, c := range []struct {
		path  string
		names []string
		want  map[string]string
	}{
		{"/v1/responses", []string{"studio-b"}, map[string]string{"img-up": "studio-b", "chat-up": "chat"}},
		{"/v1/responses", []string{"studio-a"}, map[string]string{"img-up": "studio-a", "chat-up": "chat"}},
		{"/v1/responses", nil, nil},
		{"/v1/responses/resp_1", nil, map[string]string{"img-up": "studio-a", "chat-up": "chat"}},
		{"/v1/responses/resp_1/cancel", nil, map[string]string{"img-up": "studio-a", "chat-up": "chat"}},
		{"/v1/responsesX", []string{"studio-b"}, nil},
		{"/v1/chat/completions", []string{"studio-b"}, nil},
	} {
		if got := answerToolModels(p, c.path, c.names); !maps.Equal(got, c.want) {
			t.Errorf("%s %v: %v, want %v", c.path, c.names, got, c.want)
		}
	}
}
