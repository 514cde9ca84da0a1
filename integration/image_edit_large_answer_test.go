package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestEditAnsweredPastTheBoundIsCharged: an edit the provider answers 200 with its images
// themselves, two b64_json PNGs of 2.5 MB each (gpt-image models answer edits so), past the
// 4 MiB the gateway reads of an upstream answer, is a 502 to the client as before, and is charged
// its estimate: the provider made the images, and bills them. Before, its hold was released as
// though the upstream had not answered: any client could have images made at the operator's
// expense for nothing, by asking for a few large ones.
func TestEditAnsweredPastTheBoundIsCharged(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	image := strings.Repeat("iVBO", (5<<20)/8)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1,"data":[{"b64_json":%q},{"b64_json":%q}],"size":"1024x1024","quality":"high"}`, image, image)
	}))
	t.Cleanup(provider.Close)
	base, g := startSimGateway(t, imageTaskEndCaddyfile, map[string]string{"upstream_url": provider.URL,
		"usage_log": filepath.Join(t.TempDir(), "usage.log")})
	keysEnv{g: g}.credit(t, "painters", "1", "img-large-1")
	r := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("edit-async", 2, "1024x1024", "high"))
	if code, _ := errorCodeAndShape(r); r.status != http.StatusBadGateway || code != "invalid_response" {
		t.Fatalf("edit = %d %.300s, want 502 invalid_response", r.status, r.body)
	}
	awaitBalance(t, g, "painters", "0.66", "0") // two high 1024x1024 images at 0.17
}
