package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

const imageAliasCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider images {
			base_url {{upstream}}/v1
			api_key upstream-key
			models gpt-image-async
			model_map gpt-image-async upstream-image-2025
		}
		key mg-image-alias {
			account acme
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		@image_edits path /v1/images/edits /v1/images/tasks/*
		mediagw_image_edits @image_edits
		respond 404
	}
}
`

// An image edit of a model with a model_map alias: the upstream gets its own id, and the client
// reads only its own, in the create's answer and in the task query's, whose upstream answer
// names the model too. The upstream id is never shown (docs/providers.md, model aliases).
func TestImageTaskQueryShowsTheClientModel(t *testing.T) {
	var sent []string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/images/edits":
			var req struct {
				Model string `json:"model"`
			}
			body, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(body, &req)
			sent = append(sent, req.Model)
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "imgt_alias1", "model": req.Model, "status": "queued", "created": 1})
		case r.Method == http.MethodGet && r.URL.Path == "/v1/images/tasks/imgt_alias1":
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "imgt_alias1", "model": "upstream-image-2025", "status": "succeeded",
				"progress": 100, "created": 1, "data": []any{map[string]string{"url": "https://cdn.example.com/out.png"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(upstream.Close)
	port := freePort(t)
	startGateway(t, imageAliasCaddyfile, map[string]string{"port": strconv.Itoa(port), "upstream": upstream.URL})
	base := "http://127.0.0.1:" + strconv.Itoa(port)

	created := call(t, "POST", base+"/v1/images/edits", "mg-image-alias",
		`{"model":"gpt-image-async","prompt":"blue","images":[{"image_url":"https://cdn.example.com/a.png"}]}`)
	if created.status != 200 || created.field("id") != "imgt_alias1" || created.field("model") != "gpt-image-async" {
		t.Fatalf("create = %d %s", created.status, created.body)
	}
	if len(sent) != 1 || sent[0] != "upstream-image-2025" {
		t.Fatalf("the upstream was sent models %v", sent)
	}
	got := call(t, "GET", base+"/v1/images/tasks/imgt_alias1", "mg-image-alias", nil)
	if got.status != 200 || got.field("status") != "succeeded" || got.field("model") != "gpt-image-async" ||
		strings.Contains(string(got.body), "upstream-image-2025") {
		t.Fatalf("query = %d %s; want the client's model id only", got.status, got.body)
	}
}
