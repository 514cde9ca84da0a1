package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediagw/mediagw/internal/testredis"
)

const keepResultsCaddyfile = `{
	admin off
	persist_config off
	mediagw {
		%s
		provider ark {
			base_url %s/api/v3
			api_key ark-key
			models seedance-keep
		}
		provider veo {
			base_url %s
			api_key gemini-upstream-key
			protocol gemini
			models veo-3.0-generate-001
		}
		key mg-alice {
			account alice
		}
		watcher {
			interval 100ms
		}
		callbacks {
			allow_private
			retry_schedule 300ms 300ms 300ms
		}
		upload {
			bucket %s
			endpoint %s
			path_style
			access_key_id %s
			secret_access_key %s
			keep_results {
				prefix kept/
				%s
				lease 2s
			}
		}
	}
}

http://127.0.0.1:%d {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks*
		respond 404
	}
}
`

// keepSetup is a gateway (a caddy subprocess) with keep_results on versitygw, the fake upstream
// and a callback receiver.
type keepSetup struct {
	s3         *s3Server
	bucket     string
	up         *arkResults
	gemini     *fakeGemini
	geminiURL  string
	rc         *receiver
	publicBase string
	cfg, base  string
}

// newKeepSetup prepares a gateway on a Badger store; storage, when given, is the Caddyfile's
// storage line instead.
func newKeepSetup(t *testing.T, public bool, videoSize int, storage ...string) *keepSetup {
	k := &keepSetup{s3: startS3(t), bucket: "results", up: newArkResults(t, videoSize), rc: newReceiver(t, func(int) int { return 200 })}
	k.s3.createBucket(t, k.bucket, public)
	if public {
		k.publicBase = "public_base_url " + k.s3.endpoint + "/" + k.bucket
	}
	store := "storage badger " + t.TempDir()
	if len(storage) > 0 {
		store = storage[0]
	}
	k.gemini, k.geminiURL = newFakeGemini(t, "gemini-upstream-key")
	k.cfg, k.base = k.config(t, store)
	return k
}

// config is a gateway's Caddyfile on a port of its own, and its base URL.
func (k *keepSetup) config(t *testing.T, store string) (cfg, base string) {
	port := freePort(t)
	return fmt.Sprintf(keepResultsCaddyfile, store, k.up.URL, k.geminiURL, k.bucket, k.s3.endpoint, k.s3.access, k.s3.secret, k.publicBase, port),
		fmt.Sprintf("http://127.0.0.1:%d", port)
}

func (k *keepSetup) create(t *testing.T) string {
	t.Helper()
	r := call(t, "POST", k.base+"/api/v3/contents/generations/tasks", "mg-alice",
		fmt.Sprintf(`{"model":"seedance-keep","content":[{"type":"text","text":"a kept result"}],"return_last_frame":true,"callback_url":%q}`, k.rc.URL))
	id := r.field("id")
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	return id
}

// succeeded waits for the task's succeeded callback and answers its body.
func (k *keepSetup) succeeded(t *testing.T) map[string]any {
	t.Helper()
	var body []byte
	waitFor(t, "the succeeded callback", func() bool {
		for _, d := range k.rc.seen() {
			if d.status == "succeeded" {
				body = d.body
				return true
			}
		}
		return false
	})
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// waitStalled waits until a gateway is copying the video whose download stalls.
func (k *keepSetup) waitStalled(t *testing.T) {
	t.Helper()
	select {
	case <-k.up.stalled:
	case <-time.After(60 * time.Second):
		t.Fatal("the gateway did not start copying the video")
	}
}

// oneSucceededCallback checks, a second after the succeeded callback, that no other followed.
func (k *keepSetup) oneSucceededCallback(t *testing.T) {
	t.Helper()
	time.Sleep(time.Second)
	succeeded := 0
	for _, d := range k.rc.seen() {
		if d.status == "succeeded" {
			succeeded++
		}
	}
	if succeeded != 1 {
		t.Fatalf("%d succeeded callbacks; want one", succeeded)
	}
}

// download GETs a URL without credentials.
func download(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET kept object = %d %v", resp.StatusCode, err)
	}
	return b
}

func contentURLs(t *testing.T, answer map[string]any) (video, lastFrame string) {
	t.Helper()
	c, _ := answer["content"].(map[string]any)
	video, _ = c["video_url"].(string)
	lastFrame, _ = c["last_frame_url"].(string)
	if video == "" || lastFrame == "" {
		t.Fatalf("answer without the result's URLs: %v", answer)
	}
	return video, lastFrame
}

// checkKept checks that an answer carries kept objects, not the provider's URLs, that they
// download without credentials byte for byte as the provider served them, and that the bucket
// holds them under the configured prefix.
func (k *keepSetup) checkKept(t *testing.T, answer map[string]any, public bool) {
	t.Helper()
	video, lastFrame := contentURLs(t, answer)
	for _, u := range []string{video, lastFrame} {
		if strings.HasPrefix(u, k.up.URL) {
			t.Fatalf("the answer carries the provider's URL %s", u)
		}
		if !strings.HasPrefix(u, k.s3.endpoint+"/"+k.bucket+"/kept/") {
			t.Fatalf("the answer's URL %s is not a kept object", u)
		}
		if signed := strings.Contains(u, "X-Amz-Signature="); signed == public {
			t.Fatalf("public bucket %v, URL presigned %v", public, signed)
		}
	}
	if got := download(t, video); !bytes.Equal(got, k.up.video) {
		t.Fatalf("the kept video differs from the provider's (%d bytes, want %d)", len(got), len(k.up.video))
	}
	if got := download(t, lastFrame); !bytes.Equal(got, k.up.frame) {
		t.Fatalf("the kept last frame differs from the provider's")
	}
	list, err := k.s3.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(k.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	if len(keys) != 2 || !strings.HasSuffix(keys[0], "/last_frame.png") || !strings.HasSuffix(keys[1], "/video.mp4") || !strings.HasPrefix(keys[0], "kept/") {
		t.Fatalf("bucket holds %v; want the video and the last frame under kept/", keys)
	}
}

// TestKeptResultIsByteIdentical: with keep_results, a succeeded task's video (12 MiB: a
// multipart upload) and last frame are copied into the bucket; the task is running until then,
// and then its query answer and its callback carry the kept objects, which download byte for
// byte as the provider served them: a fresh presigned GET from a private bucket, the public
// address from a public one. No presigned URL reaches the gateway's log. The provider's
// content carries members besides its URLs that are not strings (a number, an object, null):
// the answers carry the kept objects all the same, never the provider's own addresses.
func TestKeptResultIsByteIdentical(t *testing.T) {
	t.Parallel()
	for _, public := range []bool{false, true} {
		t.Run(fmt.Sprintf("public=%v", public), func(t *testing.T) {
			t.Parallel()
			k := newKeepSetup(t, public, 12<<20)
			k.up.moreContent = map[string]any{"size_bytes": 12 << 20, "meta": map[string]any{"fps": 24}, "file_url": nil}
			gw := startCaddyProcess(t, k.cfg, k.base+"/")
			id := k.create(t)
			cb := k.succeeded(t)
			for _, d := range k.rc.seen() {
				if d.status == "succeeded" {
					break
				}
				if strings.Contains(string(d.body), "video_url") {
					t.Fatalf("a callback before the succeeded one carries a result: %s", d.body)
				}
			}
			k.checkKept(t, cb, public)

			r := call(t, "GET", k.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
			answer := r.json(t)
			if r.status != 200 || answer["status"] != "succeeded" {
				t.Fatalf("query = %d %s", r.status, r.body)
			}
			k.checkKept(t, answer, public)
			if u, ok := answer["usage"].(map[string]any); !ok || u["completion_tokens"] != float64(108900) {
				t.Fatalf("the kept answer lost the provider's usage: %s", r.body)
			}
			r = call(t, "GET", k.base+"/api/v3/contents/generations/tasks?page_size=10", "mg-alice", nil)
			items, _ := r.json(t)["items"].([]any)
			if len(items) != 1 {
				t.Fatalf("list = %s", r.body)
			}
			k.checkKept(t, items[0].(map[string]any), public)
			gw.kill()
			log, err := os.ReadFile(gw.log)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(log, []byte("X-Amz-Signature")) || bytes.Contains(log, []byte(k.s3.secret)) {
				t.Fatalf("the gateway logged a presigned URL or the bucket's secret:\n%s", log)
			}
		})
	}
}

// TestKeptResultPastMaxSizeIsNotKept: a provider's result past keep_results max_size is not
// copied into the operator's bucket, whether the source announces its size or streams without
// one (here 12 MiB, chunked, against a max_size of 10 MiB: the first 8 MiB part is uploaded
// before the source is seen to be too large). The copy stops, its multipart upload is aborted
// (the bucket holds no object and no upload in progress), it is not tried again (one download,
// with attempts 3), and the task ends succeeded with the provider's own result. Without the
// bound a provider, or a result URL it names, could fill the bucket without end.
func TestKeptResultPastMaxSizeIsNotKept(t *testing.T) {
	t.Parallel()
	k := newKeepSetup(t, false, 12<<20)
	k.up.unsized.Store(true)
	k.publicBase = "max_size 10MiB\n\t\t\t\tattempts 3" // the keep_results block's free line
	k.cfg, k.base = k.config(t, "storage badger "+t.TempDir())
	startCaddyProcess(t, k.cfg, k.base+"/")
	id := k.create(t)
	cb := k.succeeded(t)
	if video, _ := contentURLs(t, cb); video != k.up.URL+"/files/video.mp4" {
		t.Fatalf("the succeeded callback's video_url = %s; want the provider's own", video)
	}
	r := call(t, "GET", k.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	if video, _ := contentURLs(t, r.json(t)); r.field("status") != "succeeded" || video != k.up.URL+"/files/video.mp4" {
		t.Fatalf("query = %d %s; want succeeded with the provider's video_url", r.status, r.body)
	}
	if n := k.up.downloads.Load(); n != 1 {
		t.Fatalf("the provider's video was downloaded %d times; want once (a result too large is not tried again)", n)
	}
	ctx := context.Background()
	list, err := k.s3.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(k.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	uploads, err := k.s3.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(k.bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Contents) != 0 || len(uploads.Uploads) != 0 {
		t.Fatalf("the bucket holds %d objects and %d uploads in progress; want none", len(list.Contents), len(uploads.Uploads))
	}
}

// TestKeptResultCopySurvivesSIGKILL: the gateway is killed with SIGKILL while it copies a video
// (the provider's download stalls midway); the task is running until then. The restarted
// gateway takes the copy over once its lease (2s) has run out, completes it, and the one
// succeeded callback carries the kept URL, whose object is byte-identical to the provider's.
func TestKeptResultCopySurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	k := newKeepSetup(t, false, 12<<20)
	k.up.stallNext.Store(true)
	gw := startCaddyProcess(t, k.cfg, k.base+"/")
	id := k.create(t)
	k.waitStalled(t)
	r := call(t, "GET", k.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	if r.status != 200 || r.field("status") != "running" || strings.Contains(string(r.body), "video_url") {
		t.Fatalf("while its result is copied, the task answers %d %s; want running without a result", r.status, r.body)
	}
	gw.kill()
	close(k.up.release)
	if n := len(k.rc.seen()); n > 0 && k.rc.seen()[n-1].status == "succeeded" {
		t.Fatal("succeeded was called back before the copy was done")
	}

	startCaddyProcess(t, k.cfg, k.base+"/")
	cb := k.succeeded(t)
	k.checkKept(t, cb, false)
	if n := k.up.downloads.Load(); n != 2 {
		t.Fatalf("the provider's video was downloaded %d times; want 2 (the killed copy and the restarted one's)", n)
	}
	k.oneSucceededCallback(t)
}

// TestKeptCredentialedResult: a Veo result, a file URI that only the operator's key downloads, is
// copied through the gemini adaptor (the key goes to the provider's origin only: its signed
// storage refuses a request that carries it); the answer carries the kept object, neither the
// content endpoint nor the file URI, and it is byte-identical to the provider's file.
func TestKeptCredentialedResult(t *testing.T) {
	t.Parallel()
	k := newKeepSetup(t, false, 1024)
	k.gemini.Video = randomBytes(t, 9<<20)
	startCaddyProcess(t, k.cfg, k.base+"/")
	r := call(t, "POST", k.base+"/api/v3/contents/generations/tasks", "mg-alice",
		fmt.Sprintf(`{"model":"veo-3.0-generate-001","content":[{"type":"text","text":"a lighthouse at dawn"}],"callback_url":%q}`, k.rc.URL))
	id := r.field("id")
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	cb := k.succeeded(t)
	r = call(t, "GET", k.base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	for _, answer := range []map[string]any{cb, r.json(t)} {
		c, _ := answer["content"].(map[string]any)
		video, _ := c["video_url"].(string)
		if !strings.HasPrefix(video, k.s3.endpoint+"/"+k.bucket+"/kept/") || !strings.Contains(video, "X-Amz-Signature=") {
			t.Fatalf("the answer's video_url %q is not a presigned GET of a kept object", video)
		}
		if strings.Contains(video, "gemini-upstream-key") || strings.Contains(video, "/content") {
			t.Fatalf("the answer's video_url %q exposes the provider or the content endpoint", video)
		}
		if _, ok := c["last_frame_url"]; ok {
			t.Fatalf("a last frame that the provider never returned: %v", c)
		}
		if got := download(t, video); !bytes.Equal(got, k.gemini.Video) {
			t.Fatalf("the kept video differs from the provider's file (%d bytes, want %d)", len(got), len(k.gemini.Video))
		}
	}
	if storage := k.gemini.log.matching("GET", "/storage/"); len(storage) != 1 {
		t.Fatalf("the provider's file was downloaded %d times; want once", len(storage))
	}
}

// TestKeptResultTakenOverByAnotherInstance: two gateways share a Redis store; the one copying a
// result is killed with SIGKILL mid-copy, and the other takes the copy over once its lease (2s)
// has run out. One succeeded callback carries the kept URL, and either gateway answers it.
func TestKeptResultTakenOverByAnotherInstance(t *testing.T) {
	t.Parallel()
	redis := testredis.Start(t, testredis.Options{})
	store := fmt.Sprintf("storage redis %s {\n\t\t\tkey_prefix keep\n\t\t}", redis.URL())
	k := newKeepSetup(t, false, 12<<20, store)
	k.up.stallNext.Store(true)
	first := startCaddyProcess(t, k.cfg, k.base+"/")
	id := k.create(t)
	k.waitStalled(t)
	cfg, base := k.config(t, store)
	startCaddyProcess(t, cfg, base+"/")
	r := call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	if r.status != 200 || r.field("status") != "running" {
		t.Fatalf("the other gateway answers %d %s while the result is copied; want running", r.status, r.body)
	}
	first.kill()
	close(k.up.release)

	cb := k.succeeded(t)
	k.checkKept(t, cb, false)
	r = call(t, "GET", base+"/api/v3/contents/generations/tasks/"+id, "mg-alice", nil)
	if r.status != 200 || r.field("status") != "succeeded" {
		t.Fatalf("query = %d %s", r.status, r.body)
	}
	k.checkKept(t, r.json(t), false)
	if n := k.up.downloads.Load(); n != 2 {
		t.Fatalf("the provider's video was downloaded %d times; want 2 (the killed copy and the one taken over)", n)
	}
	k.oneSucceededCallback(t)
}
