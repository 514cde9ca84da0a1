package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Of an idempotent pass-through create only what the provider made (a 2xx answer) is kept. A
// provider's 408 (its own request timeout: "retry") frees the key, so openai-go's retry of it
// (the SDK retries 408, with the same Idempotency-Key) reaches the provider and gets its video,
// instead of the 408 kept for 24 h.
func TestIdempotentCreateProviderRetryableAnswerIsNotKept(t *testing.T) {
	var creates atomic.Int64
	up := fakeVideoCreatesFailingFirst(t, &creates, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusRequestTimeout)
		fmt.Fprint(w, `{"error":{"message":"Request timed out.","type":"timeout","param":null,"code":null}}`)
	})
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "idem-create-408-1")
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(2))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	video, err := createVideo(ctx, client, "4", "", "stainless-retry-408")
	t.Logf("provider asked %d times", creates.Load())
	if err != nil || video.ID != "video_2" {
		t.Fatalf("openai-go's create, retried after the provider's 408 = %q, %v; want the video of the retry", video.ID, err)
	}
}
