package integration

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// A video create that the provider accepts (200) with an answer whose id the gateway cannot
// record as the account's (its id key given twice, with two values: the owner of which video?)
// is answered 500 and the client never learns an id; but the provider may be making a video and
// bills it. As the task API charges a task it cannot follow, the create is charged its estimate
// (4 s at 0.10: 0.4), and its Idempotency-Key is spent: the SDK's retry is answered 409
// idempotency_answer_not_kept by the gateway and never reaches the provider to make (and bill)
// another. Before, the hold was released as if the provider had refused, and the retry made a
// second video at the provider.
func TestUnrecordableVideoCreateIsChargedAndItsKeySpent(t *testing.T) {
	var creates atomic.Int64
	up := fakeVideoCreatesFailingFirst(t, &creates, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"video_first","object":"video","model":"sora-2","status":"queued","seconds":"4","size":"720x1280","id":"video_other"}`)
	})
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": up.URL, "up_host": strings.TrimPrefix(up.URL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "unrecorded-create-1")
	post := func() response {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos", strings.NewReader(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"4"}`))
		req.Header.Set("Authorization", "Bearer mg-pass-video")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "stainless-retry-unrecorded")
		res, err := sendRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := post()
	if first.status != http.StatusInternalServerError || strings.Contains(string(first.body), "video_") {
		t.Fatalf("the unrecordable create = %d %q; want 500 without an id", first.status, first.body)
	}
	awaitBalance(t, g, "filmmakers", "2.6", "0")
	retry := post()
	if e := retry.apiError(t); retry.status != http.StatusConflict || e.code != "idempotency_answer_not_kept" {
		t.Fatalf("the retry = %d %q; want 409 idempotency_answer_not_kept", retry.status, retry.body)
	}
	if n := creates.Load(); n != 1 {
		t.Fatalf("the provider was asked %d times to create; want 1 (the retry made another video)", n)
	}
	awaitBalance(t, g, "filmmakers", "2.6", "0")
}
