package integration

import (
	"net/http"
	"strings"
	"testing"
)

// The tests in this file walk the error tables of the interface contract (§7.1 for the video
// task endpoints, §7.3 for presign, with §5's authentication rules) row by row against one
// gateway, each answer checked for its status, its code and the shape of its body.

const specErrorsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		disabled_accounts closed
		provider video {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models seedance-sim
		}
		currency USD
		price seedance-sim {
			request 1
		}
		key mg-err {
			account errors
		}
		key mg-err-broke {
			account errors-broke
			budget 0.5
		}
		key mg-err-rate {
			account errors-rate
			rate 1 1h
		}
		key mg-err-active {
			account errors-active
			max_active_tasks 1
		}
		key mg-err-off {
			account errors
			disabled
		}
		key mg-err-far {
			account errors
			allow_ips 203.0.113.0/24
		}
		key mg-err-closed {
			account closed
		}
		{{upload}}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_presign /v1/upload/presign
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		mediagw_videos /v1/videos*
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 1m
		running_for 1s
		api_key sim-upstream-key
	}
}
`

// TestSpecTaskErrorTable checks the rows of §7.1 that concern the caller's key and limits (the
// validation rows are TestSpecVideoTaskCreateRules'): 401 for a missing or unknown key, 402 past
// the budget, 429 past the key's rate or its active tasks (with Retry-After), each in the
// request-level error body {"code","message","data":null}; and §5's 403s in that shape.
func TestSpecTaskErrorTable(t *testing.T) {
	base, _ := startSimGateway(t, specErrorsCaddyfile, map[string]string{"upload": ""})
	url := base + "/api/v3/contents/generations/tasks"
	body := `{"model":"seedance-sim","content":[{"type":"text","text":"a lighthouse"}]}`
	// The first request of each limited key is within its limit; the second is not.
	for _, key := range []string{"mg-err-rate", "mg-err-active"} {
		checkTaskAnswer(t, call(t, "POST", url, key, body), specCase{"7.1", key + " within its limit", body, 200, ""})
	}
	for _, tc := range []struct {
		name, key string
		status    int
		code      string
		retry     bool
	}{
		{"no key", "", 401, "missing_api_key", false},
		{"unknown key", "mg-err-unknown", 401, "invalid_api_key", false},
		{"disabled key", "mg-err-off", 403, "key_disabled", false},
		{"address not allowed", "mg-err-far", 403, "ip_not_allowed", false},
		{"disabled account", "mg-err-closed", 403, "account_disabled", false},
		{"past the budget", "mg-err-broke", 402, "insufficient_quota", false},
		{"past the rate", "mg-err-rate", 429, "rate_limit_exceeded", true},
		{"past the active tasks", "mg-err-active", 429, "too_many_active_tasks", true},
	} {
		r := call(t, "POST", url, tc.key, body)
		checkTaskAnswer(t, r, specCase{"7.1", tc.name, body, tc.status, tc.code})
		if got := r.header.Get("Retry-After"); tc.retry != (got != "") {
			t.Errorf("7.1 %s: Retry-After %q", tc.name, got)
		}
	}
}

// TestSpecPresignErrorTable checks §7.3 row by row: each error in the gateway's error body
// {"error":{"message","type","param","code"}} with the row's status and code; 500
// upload_presign_failed when the URL cannot be signed (here: no credentials anywhere in the AWS
// default chain), and 503 upload_service_unavailable without upload storage. The 429 row is
// TestSpecPresignDefaultRateLimit's.
func TestSpecPresignErrorTable(t *testing.T) {
	// No credential in the environment, no shared files, no instance metadata: the default
	// chain has nothing to sign with, and asks no network for it.
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(name, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	unsigned := "upload {\n\t\t\tbucket media\n\t\t\tendpoint http://127.0.0.1:9\n\t\t\tpath_style\n\t\t}"
	base, g := startSimGateway(t, specErrorsCaddyfile, map[string]string{"upload": unsigned})
	url := base + "/v1/upload/presign"
	presign := func(key, contentType, body string) response {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		return do(t, req)
	}
	const json = "application/json"
	for _, tc := range []struct {
		name, key, contentType, body string
		status                       int
		code                         string
	}{
		{"not JSON", "mg-err", json, `{"filename":`, 400, "invalid_request_body"},
		{"not a JSON object", "mg-err", json, `["a.png"]`, 400, "invalid_request_body"},
		{"Content-Type not JSON", "mg-err", "text/plain", `{"filename":"a.png"}`, 400, "invalid_request_body"},
		{"no Content-Type", "mg-err", "", `{"filename":"a.png"}`, 400, "invalid_request_body"},
		{"filename missing", "mg-err", json, `{"content_type":"image/png"}`, 400, "invalid_upload_request"},
		{"filename past 255 bytes", "mg-err", json, `{"filename":"` + strings.Repeat("a", 252) + `.png"}`, 400, "invalid_upload_request"},
		{"content_type not a MIME type", "mg-err", json, `{"filename":"a.png","content_type":"png"}`, 400, "invalid_upload_request"},
		{"object key chosen", "mg-err", json, `{"filename":"a.png","object_key":"mine.png"}`, 400, "invalid_upload_request"},
		{"no key", "", json, `{"filename":"a.png"}`, 401, "missing_api_key"},
		{"unknown key", "mg-err-unknown", json, `{"filename":"a.png"}`, 401, "invalid_api_key"},
		{"disabled key", "mg-err-off", json, `{"filename":"a.png"}`, 403, "key_disabled"},
		{"address not allowed", "mg-err-far", json, `{"filename":"a.png"}`, 403, "ip_not_allowed"},
		{"disabled account", "mg-err-closed", json, `{"filename":"a.png"}`, 403, "account_disabled"},
		{"signing failed", "mg-err", json, `{"filename":"a.png","content_type":"image/png"}`, 500, "upload_presign_failed"},
	} {
		checkOpenAIAnswer(t, presign(tc.key, tc.contentType, tc.body), specCase{"7.3", tc.name, tc.body, tc.status, tc.code})
	}
	// The upper bound of filename is 255 bytes inclusive (§2.8): that one is only refused for
	// the signature, past the checks.
	checkOpenAIAnswer(t, presign("mg-err", json, `{"filename":"`+strings.Repeat("a", 251)+`.png"}`),
		specCase{"2.8", "filename of 255 bytes", "", 500, "upload_presign_failed"})

	if err := g.reload(strings.Replace(specErrorsCaddyfile, "{{upload}}", "", 1)); err != nil {
		t.Fatal(err)
	}
	checkOpenAIAnswer(t, presign("mg-err", json, `{"filename":"a.png"}`),
		specCase{"7.3", "no upload storage", "", 503, "upload_service_unavailable"})
}

// TestVideosFrontRefusals checks what docs/api.md says the /v1/videos front refuses: a remix of
// a video it made (404 not_found, and nothing is created), a list's limit or order out of their
// ranges and a content variant it does not know (400 invalid_request naming the parameter), a
// spritesheet (404 not_found).
func TestVideosFrontRefusals(t *testing.T) {
	base, _ := startSimGateway(t, specErrorsCaddyfile, map[string]string{"upload": ""})
	r := call(t, "POST", base+"/v1/videos", "mg-err", `{"model":"seedance-sim","prompt":"a lighthouse"}`)
	id := r.field("id")
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		method, path      string
		status            int
		code, param, kind string
	}{
		{"POST", "/v1/videos/" + id + "/remix", 404, "not_found", "", "not_found"},
		{"GET", "/v1/videos?limit=0", 400, "invalid_request", "limit", "invalid_request_error"},
		{"GET", "/v1/videos?limit=101", 400, "invalid_request", "limit", "invalid_request_error"},
		{"GET", "/v1/videos?limit=ten", 400, "invalid_request", "limit", "invalid_request_error"},
		{"GET", "/v1/videos?order=newest", 400, "invalid_request", "order", "invalid_request_error"},
		{"GET", "/v1/videos/" + id + "/content?variant=poster", 400, "invalid_request", "variant", "invalid_request_error"},
		{"GET", "/v1/videos/" + id + "/content?variant=spritesheet", 404, "not_found", "", "not_found"},
	} {
		var body any
		if tc.method == "POST" {
			body = `{"prompt":"at dusk"}`
		}
		r := call(t, tc.method, base+tc.path, "mg-err", body)
		if e := r.apiError(t); r.status != tc.status || e.code != tc.code || e.param != tc.param || e.kind != tc.kind || e.message == "" {
			t.Errorf("%s %s = %d %s, want %d %s (param %q)", tc.method, tc.path, r.status, r.body, tc.status, tc.code, tc.param)
		}
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	decodeJSON(t, call(t, "GET", base+"/v1/videos", "mg-err", nil).body, &list)
	if len(list.Data) != 1 || list.Data[0].ID != id {
		t.Fatalf("videos after the remix = %+v, want only %s", list.Data, id)
	}
	for _, q := range []string{"limit=1", "limit=100", "order=asc", "order=desc"} {
		if r := call(t, "GET", base+"/v1/videos?"+q, "mg-err", nil); r.status != 200 {
			t.Errorf("list %s = %d %s", q, r.status, r.body)
		}
	}
}

const specUpstreamFailuresCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark-failing {
			base_url {{ark_failing}}/api/v3
			api_key ark-operator-key
			models ark-failing
		}
		provider ark-failing-videos {
			base_url {{ark_failing}}/api/v3
			api_key ark-operator-key
			models ark-failing-videos
		}
		provider ark-busy {
			base_url {{ark_busy}}/api/v3
			api_key ark-operator-key
			models ark-busy
		}
		provider ark-wrong-key {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key ark-stale-operator-key
			models ark-wrong-key
		}
		provider wan-wrong-key {
			base_url {{dashscope}}
			api_key dash-stale-operator-key
			protocol dashscope
			models wan-wrong-key
		}
		key mg-err {
			account errors
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		mediagw_videos /v1/videos*
		respond 404
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-upstream-key
	}
}
`

// TestSpecTaskCreateUpstreamFailures checks §7.1's 502 row: when the provider fails a create (a
// 5xx with an error body Ark's reference gives), or refuses the operator's credential (a 401,
// in Ark's and DashScope's shapes), the client gets 502 invalid_response, on the task API and on
// /v1/videos: not the provider's code, which for a refused credential (AuthenticationError,
// InvalidApiKey, "the API key is missing or invalid") reads as if the client's key were wrong.
func TestSpecTaskCreateUpstreamFailures(t *testing.T) {
	arkFailing := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeFakeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]string{
			"code": "InternalServiceError", "message": "The service encountered an unexpected internal error.",
			"param": "", "type": "InternalServiceError"}})
	}))
	arkBusy := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		writeFakeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]string{
			"code": "RateLimitExceeded.EndpointRPMExceeded", "message": "Request rate exceeds the limit.", "param": "", "type": "TooManyRequests"}})
	}))
	_, dashscope := newFakeDashScope(t, "dash-operator-key")
	base, _ := startSimGateway(t, specUpstreamFailuresCaddyfile, map[string]string{"ark_failing": arkFailing.URL, "ark_busy": arkBusy.URL, "dashscope": dashscope})
	// §7.1's 429 and §8's "the client waits": the provider's 429 is passed on with its code and
	// its Retry-After, so that the client knows how long to wait.
	busy := `{"model":"ark-busy","content":[{"type":"text","text":"a lighthouse"}]}`
	r := call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-err", busy)
	checkTaskAnswer(t, r, specCase{"7.1", "provider rate limited", busy, 429, "RateLimitExceeded.EndpointRPMExceeded"})
	if got := r.header.Get("Retry-After"); got != "7" {
		t.Errorf("the provider's 429 reached the client with Retry-After %q, want its 7", got)
	}
	// A 5xx cools its upstream down (the next create is 503 upstream_unavailable), so /v1/videos
	// has a failing provider of its own.
	for task, video := range map[string]string{"ark-failing": "ark-failing-videos", "ark-wrong-key": "ark-wrong-key", "wan-wrong-key": "wan-wrong-key"} {
		body := `{"model":"` + task + `","content":[{"type":"text","text":"a lighthouse"}]}`
		r = call(t, "POST", base+"/api/v3/contents/generations/tasks", "mg-err", body)
		checkTaskAnswer(t, r, specCase{"7.1", task, body, 502, "invalid_response"})
		r = call(t, "POST", base+"/v1/videos", "mg-err", `{"model":"`+video+`","prompt":"a lighthouse"}`)
		if e := r.apiError(t); r.status != 502 || e.code != "invalid_response" || e.message == "" {
			t.Errorf("/v1/videos %s: got %d %s, want 502 invalid_response", video, r.status, r.body)
		}
	}
}
