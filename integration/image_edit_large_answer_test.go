package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestLargeEditAnswersAreReadWhole: an edit the provider answers 200 with its images themselves,
// two b64_json PNGs of 2.5 MB each (gpt-image models answer edits so; ten large ones are tens of
// MB), reaches the client whole and is charged the two images it made. Before, the gateway read
// no more than 4 MiB of any answer: the client got 502 for images it was then charged for. Past
// the handler's max_answer (here reloaded at 3 MiB), the same answer is a 502 and is charged its
// estimate: the provider made the images, and bills them. Sent with an Idempotency-Key, that 502
// is kept: an SDK's retries of it get it again, and neither reach the provider nor are charged
// (before, every retry was made and charged again).
func TestLargeEditAnswersAreReadWhole(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	image := strings.Repeat("iVBO", (5<<20)/8)
	var calls atomic.Int64
	base, g := startLargeImageEdits(t, &calls, func() string { return image })
	keysEnv{g: g}.credit(t, "painters", "1", "img-large-1")

	r := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("edit-async", 2, "1024x1024", "high"))
	if r.status != http.StatusOK {
		t.Fatalf("edit = %d %.300s, want 200", r.status, r.body)
	}
	var answer struct {
		Data []struct {
			B64JSON string `json:"b64_json"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(r.body), &answer); err != nil || len(answer.Data) != 2 ||
		answer.Data[0].B64JSON != image || answer.Data[1].B64JSON != image {
		t.Fatalf("edit answer of %d bytes: %d items (%v), want both images whole", len(r.body), len(answer.Data), err)
	}
	awaitBalance(t, g, "painters", "0.66", "0") // two high 1024x1024 images at 0.17

	bounded := strings.Replace(imageTaskEndCaddyfile, "mediagw_image_edits @image_edits",
		"mediagw_image_edits @image_edits {\n\t\t\tmax_answer 3MiB\n\t\t}", 1)
	if err := g.reload(bounded); err != nil {
		t.Fatalf("reload with max_answer 3MiB: %v", err)
	}
	r = call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("edit-async", 2, "1024x1024", "high"))
	if code, _ := errorCodeAndShape(r); r.status != http.StatusBadGateway || code != "invalid_response" {
		t.Fatalf("edit past max_answer = %d %.300s, want 502 invalid_response", r.status, r.body)
	}
	awaitBalance(t, g, "painters", "0.32", "0") // charged its estimate: 0.34 again

	keysEnv{g: g}.credit(t, "painters", "1", "img-large-2")
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-image-tasks"), option.WithMaxRetries(2))
	before := calls.Load()
	err := client.Post(t.Context(), "images/edits", json.RawMessage(imageEditBody("edit-async", 2, "1024x1024", "high")), nil,
		option.WithHeader("Idempotency-Key", "edit-past-bound"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || calls.Load()-before != 1 {
		t.Fatalf("keyed edit past max_answer, retried by openai-go = %v; provider called %d times, want a 502 from one call", err, calls.Load()-before)
	}
	awaitBalance(t, g, "painters", "0.98", "0") // 1.32 - 0.34, once
}

// TestLargeEditAnswersAreReplayed: an edit sent with an Idempotency-Key whose answer carries its
// large images (5 MB here) is kept whole, so the SDK's retry of it (its connection dropped as the
// images came) gets the same answer, replayed, and is neither sent to the provider nor charged
// again. Before, only answers up to 1 MiB were kept: the retry made and paid for the images a
// second time. An answer past what the gateway keeps (8 MiB) spends its key without being kept:
// a retry gets 409 idempotency_answer_not_kept with X-Should-Retry: false, and nothing more is
// made or charged.
func TestLargeEditAnswersAreReplayed(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	var calls atomic.Int64
	var image atomic.Value
	image.Store(strings.Repeat("iVBO", (5<<20)/8))
	base, g := startLargeImageEdits(t, &calls, func() string { return image.Load().(string) })
	keysEnv{g: g}.credit(t, "painters", "2", "img-replay-1")
	edit := func(key string) response {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/images/edits", strings.NewReader(imageEditBody("edit-async", 2, "1024x1024", "high")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer mg-image-tasks")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		return do(t, req)
	}

	first := edit("edit-5mb")
	if first.status != http.StatusOK || len(first.body) < 5<<20 {
		t.Fatalf("edit = %d of %d bytes, want 200 with both images", first.status, len(first.body))
	}
	retry := edit("edit-5mb")
	if retry.status != http.StatusOK || string(retry.body) != string(first.body) || retry.header.Get("Idempotent-Replayed") != "true" || calls.Load() != 1 {
		t.Fatalf("retry = %d of %d bytes (replayed %q), provider called %d times; want the first answer replayed, one call",
			retry.status, len(retry.body), retry.header.Get("Idempotent-Replayed"), calls.Load())
	}

	image.Store(strings.Repeat("iVBO", (9<<20)/8)) // two of 4.5 MiB: past the 8 MiB kept
	huge := edit("edit-9mb")
	if huge.status != http.StatusOK || len(huge.body) < 9<<20 {
		t.Fatalf("edit past the kept size = %d of %d bytes, want 200 with both images", huge.status, len(huge.body))
	}
	for range 2 {
		r := edit("edit-9mb")
		if code, _ := errorCodeAndShape(r); r.status != http.StatusConflict || code != "idempotency_answer_not_kept" ||
			r.header.Get("X-Should-Retry") != "false" || calls.Load() != 2 {
			t.Fatalf("retry past the kept size = %d %.300s (X-Should-Retry %q), provider called %d times; want 409 idempotency_answer_not_kept, not sent again",
				r.status, r.body, r.header.Get("X-Should-Retry"), calls.Load())
		}
	}
	// Two edits charged, at two high 1024x1024 images of 0.17 each: 2 - 2 × 0.34.
	awaitBalance(t, g, "painters", "1.32", "0")
}

// startLargeImageEdits starts a gateway in front of a provider that answers every edit with two
// images of image() each, as b64_json (high, 1024x1024), counting its calls.
func startLargeImageEdits(t *testing.T, calls *atomic.Int64, image func() string) (string, *gateway) {
	t.Helper()
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		img := image()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1,"data":[{"b64_json":%q},{"b64_json":%q}],"size":"1024x1024","quality":"high"}`, img, img)
	}))
	t.Cleanup(provider.Close)
	return startSimGateway(t, imageTaskEndCaddyfile, map[string]string{"upstream_url": provider.URL,
		"usage_log": filepath.Join(t.TempDir(), "usage.log")})
}
