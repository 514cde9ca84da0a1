package integration

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// docs/api.md#idempotency: keys are kept "per account and endpoint (... each keep their own keys,
// so one key sent to two of them makes two requests)". One key sent to POST /v1/videos and then
// to POST /v1/video/generations makes a second request, not 422 idempotency_key_reused.
func TestIdempotencyKeyOnTwoEndpointsIsTwoRequests(t *testing.T) {
	var creates atomic.Int64
	up := fakeOpenAIVideoCreates(t, &creates)
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "idem-create-scope-1")
	post := func(path string) response {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"4"}`))
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "my-lighthouse")
		return do(t, req)
	}
	if r := post("/v1/videos"); r.status != 200 {
		t.Fatalf("video create = %d %s", r.status, r.body)
	}
	// The fake provider has no /v1/video/generations (404): what matters is that the request is
	// made, not refused by the gateway for the key's use on another endpoint.
	if r := post("/v1/video/generations"); strings.Contains(string(r.body), "idempotency_key_reused") {
		t.Fatalf("the same key on another endpoint = %d %s; the docs say each endpoint keeps its own keys", r.status, r.body)
	}
}
