package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

const modelsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark {
			base_url http://127.0.0.1:1/api/v3
			models seedance-pro seedance-lite
		}
		provider openai {
			base_url http://127.0.0.1:1/v1
			models gpt-image-1 gpt-4o-mini {{extra_model}}
		}
		key mg-all {
			account a
		}
		key mg-video {
			account b
			models seedance-*
		}
		key mg-gpt {
			account b
			models gpt-4o-* nothing-matches-*
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_models /v1/models
		respond 404
	}
}
`

// modelIDs lists GET /v1/models for a key and checks the OpenAI list shape.
func modelIDs(t *testing.T, base, key string) []string {
	t.Helper()
	r := call(t, "GET", base+"/v1/models", key, nil)
	ids := modelIDsFrom(r)
	if r.status != 200 || ids == nil {
		t.Fatalf("GET /v1/models = %d %s", r.status, r.body)
	}
	return ids
}

// modelIDsFrom decodes a model list answer; it returns nil for a malformed one.
func modelIDsFrom(r response) []string {
	var body map[string]any
	if json.Unmarshal(r.body, &body) != nil || body["object"] != "list" {
		return nil
	}
	data, _ := body["data"].([]any)
	ids := []string{}
	for _, item := range data {
		m, _ := item.(map[string]any)
		id, _ := m["id"].(string)
		if m["object"] != "model" || m["owned_by"] == "" || m["created"] == nil || id == "" {
			return nil
		}
		ids = append(ids, id)
	}
	return ids
}

func TestModelsFilteredPerKey(t *testing.T) {
	port := freePort(t)
	startGateway(t, modelsCaddyfile, map[string]string{"port": fmt.Sprint(port), "extra_model": ""})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"mg-all", []string{"gpt-4o-mini", "gpt-image-1", "seedance-lite", "seedance-pro"}},
		{"mg-video", []string{"seedance-lite", "seedance-pro"}},
		{"mg-gpt", []string{"gpt-4o-mini"}},
	} {
		if got := modelIDs(t, base, tc.key); !slices.Equal(got, tc.want) {
			t.Errorf("%s sees %v, want %v", tc.key, got, tc.want)
		}
	}
	if r := call(t, "POST", base+"/v1/models", "mg-all", "{}"); r.status != 405 {
		t.Errorf("POST /v1/models = %d, want 405", r.status)
	}
}
