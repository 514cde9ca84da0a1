package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mediagw/mediagw/internal/testredis"
)

// awaitBalance waits up to 30 s for account's balance and held amount (decimal strings) to be
// want and held on g's admin API.
func awaitBalance(t *testing.T, g *gateway, account, want, held string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/"+account+"/balance", "", nil)
		if b.field("balance") == want && b.field("held") == held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("balance %s; want %s and %s held", b.body, want, held)
		}
	}
}

// holdEnds is the settlements and releases among ledger entries, by hold id.
func holdEnds(entries []map[string]any) map[string][]map[string]any {
	ends := map[string][]map[string]any{}
	for _, e := range entries {
		if e["kind"] == "settle" || e["kind"] == "release" {
			id, _ := e["hold_id"].(string)
			ends[id] = append(ends[id], e)
		}
	}
	return ends
}

// redisPair starts two gateway processes on one new redis-server, each from caddyfile(admin
// port, site port, redis URL), and creates a key of account with one active-task slot on the
// first, crediting account with credit. It returns the gateways, their site bases, and the
// key's id and secret.
func redisPair(t *testing.T, caddyfile func(adminPort, port int, redisURL string) string, account, credit string) (gws []*gateway, bases []string, keyID, secret string) {
	t.Helper()
	redis := testredis.Start(t, testredis.Options{})
	for range 2 {
		adminPort, port := freePort(t), freePort(t)
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		startCaddyProcess(t, caddyfile(adminPort, port, redis.URL()), base+"/")
		gws, bases = append(gws, &gateway{t: t, admin: fmt.Sprintf("127.0.0.1:%d", adminPort)}), append(bases, base)
	}
	// One active-task slot: each create needs the slot of the object before it back, and a
	// second give-back would leave the count below zero.
	r := call(t, "POST", "http://"+gws[0].admin+"/mediagw/keys", "", `{"account":"`+account+`","max_active_tasks":1}`)
	keyID, secret = r.field("id"), r.field("key")
	if r.status != 201 || keyID == "" || secret == "" {
		t.Fatalf("creating the key = %d %s", r.status, r.body)
	}
	keysEnv{g: gws[0]}.credit(t, account, credit, "pair-1")
	return gws, bases, keyID, secret
}

// readAtOnce sends GET path from four clients at once, two on each of the gateways at bases,
// with key; each must be answered 200 (with the top-level status when status is not "").
func readAtOnce(t *testing.T, bases []string, path, key, status string) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range 4 {
		wg.Go(func() {
			<-start
			r, err := send("GET", bases[c%2]+path, key, nil)
			if err != nil || r.status != 200 || (status != "" && r.field("status") != status) {
				t.Errorf("GET %s on %d = %v %s %v", path, c%2, r.status, r.body, err)
			}
		})
	}
	close(start)
	wg.Wait()
}

// endedOnceEach checks that each hold in account's ledger on g ended once at most, and that
// releases of them were released and settlements settled; and that keyID has no active task
// left on any of gws (each slot given back once).
func endedOnceEach(t *testing.T, gws []*gateway, account, keyID string, releases, settlements int) {
	t.Helper()
	released, settled := 0, 0
	for id, e := range holdEnds(ledgerEntries(t, gws[0], account)) {
		if len(e) != 1 {
			t.Fatalf("hold %s ended %d times: %v", id, len(e), e)
		}
		switch e[0]["kind"] {
		case "release":
			released++
		case "settle":
			settled++
		}
	}
	if released != releases || settled != settlements {
		t.Fatalf("%d releases and %d settlements; want %d and %d", released, settled, releases, settlements)
	}
	// An object's end settles its hold and then gives its slot back
	// (accounting.Accountant.ObjectFinishedAs): the last slot may come back just after the
	// settlement the caller waited for. Each instance is read until no slot is held.
	for i, g := range gws {
		in := &instance{name: string(rune('A' + i)), admin: g.admin}
		active, _ := keyUsage(t, in, keyID)
		for deadline := time.Now().Add(30 * time.Second); active > 0 && time.Now().Before(deadline); active, _ = keyUsage(t, in, keyID) {
			time.Sleep(20 * time.Millisecond)
		}
		if active != 0 {
			t.Fatalf("the key has %v active tasks on %c; want 0: each slot given back once", active, 'A'+i)
		}
	}
}

// TestPassThroughVideoChargedByItsEnd: a video created through pass-through (POST /v1/videos
// without mediagw_videos; the openai-go client retrieves and deletes; a fake of OpenAI's published videos API) holds
// its estimate until the gateway sees how it ended: a retrieve that shows it completed settles
// it at the seconds and size the answer reports (8 s at 1280x720: 0.8; a video created without
// seconds, held at the contract's 5 s, is charged the 4 s the provider made: 0.4), one that
// shows it failed releases it in full (the ledger says release, "task failed"), and a delete
// settles it at its estimate (OpenAI deletes only a completed or failed video, and the answer
// does not say which), and a remix the provider accepts settles its source as completed, at the
// length and size its create's answer said. (Before, every create was charged its estimate at once: the failed video
// cost 0.8.)
func TestPassThroughVideoChargedByItsEnd(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	_, upURL := newFakeOpenAIVideos(t, "openai-operator-key")
	upURL = strings.TrimSuffix(upURL, "/v1")
	base, g := startSimGateway(t, passVideoCaddyfile, map[string]string{"up_url": upURL, "up_host": strings.TrimPrefix(upURL, "http://")})
	keysEnv{g: g}.credit(t, "filmmakers", "3", "end-1")
	balance := func(want, held string) { t.Helper(); awaitBalance(t, g, "filmmakers", want, held) }
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-pass-video"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// create makes a video with a JSON body (the fake takes JSON creates only); its id.
	create := func(body string) string {
		t.Helper()
		r := call(t, "POST", base+"/v1/videos", "mg-pass-video", body)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create %s = %d %s", body, r.status, r.body)
		}
		return r.field("id")
	}
	// until reads the video as a client polls it, until it is done; its last status.
	until := func(id string) openai.VideoStatus {
		t.Helper()
		for range 5 {
			v, err := client.Videos.Get(ctx, id)
			if err != nil {
				t.Fatalf("retrieve %s: %v", id, err)
			}
			if v.Status == openai.VideoStatusCompleted || v.Status == openai.VideoStatusFailed {
				return v.Status
			}
		}
		t.Fatalf("%s never ended", id)
		return ""
	}

	made := create(`{"model":"sora-2","prompt":"a lighthouse at dusk","seconds":"8","size":"1280x720"}`)
	balance("2.2", "0.8") // held, not charged
	if s := until(made); s != openai.VideoStatusCompleted {
		t.Fatalf("status %s", s)
	}
	balance("2.2", "0") // charged 8 s at 1280x720

	failed := create(`{"model":"sora-2","prompt":"a harbour [fail]","seconds":"8","size":"1280x720"}`)
	balance("1.4", "0.8")
	for range 2 { // queued, in_progress: the provider's next answer is failed
		if _, err := client.Videos.Get(ctx, failed); err != nil {
			t.Fatal(err)
		}
	}
	var seen sync.WaitGroup
	for range 4 { // four clients see it fail at once
		seen.Go(func() {
			if v, err := client.Videos.Get(ctx, failed); err != nil || v.Status != openai.VideoStatusFailed {
				t.Errorf("retrieve = %+v, %v; want failed", v, err)
			}
		})
	}
	seen.Wait()
	balance("2.2", "0") // released in full, once (the ledger below has one end of each hold)
	until(failed)       // seen failed again: nothing more happens
	balance("2.2", "0")

	plain := create(`{"model":"sora-2","prompt":"a tower"}`)
	balance("1.7", "0.5") // 5 s at 720p
	until(plain)
	balance("1.8", "0") // the 4 s at 720x1280 it was made

	deleted := create(`{"model":"sora-2","prompt":"a bridge","seconds":"4"}`)
	balance("1.4", "0.4")
	if _, err := client.Videos.Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	balance("1.4", "0")

	// A video that completes at the provider while its client never retrieves it through the
	// gateway, then is remixed: OpenAI remixes only a completed video, so the remix's answer
	// ends it, charged the 4 s at 720x1280 that its create's answer said (not the 5 s held).
	quay := create(`{"model":"sora-2","prompt":"a quay"}`)
	balance("0.9", "0.5")
	for range 3 { // time passes at the provider
		if r := call(t, "GET", upURL+"/v1/videos/"+quay, "openai-operator-key", nil); r.status != 200 {
			t.Fatalf("the provider's read = %d %s", r.status, r.body)
		}
	}
	if v, err := client.Videos.Remix(ctx, quay, openai.VideoRemixParams{Prompt: "at night"}); err != nil || v.RemixedFromVideoID != quay {
		t.Fatalf("remix = %+v, %v", v, err)
	}
	balance("0.6", "0.4") // the source charged 0.4; the remix holds 0.4

	ends := holdEnds(ledgerEntries(t, g, "filmmakers"))
	var kinds []string
	for _, e := range ends {
		if len(e) != 1 {
			t.Fatalf("a hold ended %d times: %v", len(e), e)
		}
		kinds = append(kinds, fmt.Sprintf("%s %v %v", e[0]["kind"], e[0]["charged"], e[0]["note"]))
	}
	want := map[string]bool{"settle 0.8 <nil>": true, "release <nil> task failed": true, "settle 0.4 <nil>": true}
	if len(kinds) != 5 {
		t.Fatalf("hold ends %v; want 5", kinds)
	}
	for _, k := range kinds {
		if !want[k] {
			t.Fatalf("hold ends %v; want settlements of 0.8 and 0.4 (three times) and one release noted task failed", kinds)
		}
	}
}

// passVideoInstanceCaddyfile is one of two gateways on one redis-server, leaving sora-2 to
// pass-through, priced per second.
const passVideoInstanceCaddyfile = `{
	admin 127.0.0.1:%[1]d
	persist_config off
	mediagw {
		storage redis %[2]s {
			key_prefix pvideo
		}
		provider openai {
			base_url %[3]s/v1
			api_key openai-operator-key
			models sora-2
		}
		price sora-2 {
			second 0.10
		}
		key mg-pass-video {
			account filmmakers
		}
	}
}

http://127.0.0.1:%[4]d {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy %[5]s {
			header_up Host {upstream_hostport}
		}
	}
}
`

// TestFailedPassThroughVideoReleasedOnceAcrossInstances: two gateways on one redis-server; each
// failed video is read by four clients at once, two on each gateway, when the provider first
// answers failed: its hold is released once (one release entry in the ledger, no settlement), and
// the balance is back to the credit, and its slot given back once (the key's one slot is free
// for the next create, and its count is 0 at the end). A completed one read the same way is
// settled once.
func TestFailedPassThroughVideoReleasedOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	fake, upURL := newFakeOpenAIVideos(t, "openai-operator-key")
	upURL = strings.TrimSuffix(upURL, "/v1")
	gws, bases, keyID, secret := redisPair(t, func(adminPort, port int, redisURL string) string {
		return fmt.Sprintf(passVideoInstanceCaddyfile, adminPort, redisURL, upURL, port, strings.TrimPrefix(upURL, "http://"))
	}, "filmmakers", "10")

	const videos = 4
	for i := range videos {
		prompt := "a harbour [fail]"
		if i == videos-1 {
			prompt = "a lighthouse"
		}
		r := call(t, "POST", bases[i%2]+"/v1/videos", secret, `{"model":"sora-2","prompt":"`+prompt+`","seconds":"8","size":"1280x720"}`)
		id := r.field("id")
		if r.status != 200 || id == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		for range 2 { // queued, in_progress: the next read of the provider is the end
			if r := call(t, "GET", bases[(i+1)%2]+"/v1/videos/"+id, secret, nil); r.status != 200 {
				t.Fatalf("retrieve = %d %s", r.status, r.body)
			}
		}
		readAtOnce(t, bases, "/v1/videos/"+id, secret, "")
	}
	if n := len(fake.log.matching("GET", "/v1/videos/")); n != videos*6 {
		t.Fatalf("the provider saw %d retrieves, want %d", n, videos*6)
	}
	awaitBalance(t, gws[1], "filmmakers", "9.2", "0") // only the completed video charged
	endedOnceEach(t, gws, "filmmakers", keyID, videos-1, 1)
}

// passVideoGenerationsCaddyfile leaves video-gen-1 (POST /v1/video/generations) to
// pass-through, priced per second.
const passVideoGenerationsCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{upstream_url}}/v1
			api_key  upstream-key
			models   video-gen-1
		}
		price video-gen-1 {
			second 0.10
		}
		key mg-generations {
			account studio
		}
	}
}
` + readmePassThroughSite

// TestPassThroughVideoGenerationChargedByItsEnd: a video generation (POST
// /v1/video/generations, passed through) is held at its duration until a retrieve shows its end:
// FAILED (a provider's upper case) releases it, succeeded without a reported length settles it at
// the estimate; a status the gateway does not know as final keeps it held.
func TestPassThroughVideoGenerationChargedByItsEnd(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake := &passThroughVideosUpstream{status: map[string]string{}}
	provider := httptest.NewServer(fake)
	t.Cleanup(provider.Close)
	base, g := startSimGateway(t, passVideoGenerationsCaddyfile, map[string]string{"upstream_url": provider.URL})
	keysEnv{g: g}.credit(t, "studio", "2", "gen-1")
	balance := func(want, held string) { t.Helper(); awaitBalance(t, g, "studio", want, held) }
	generate := func() string {
		t.Helper()
		r := call(t, "POST", base+"/v1/video/generations", "mg-generations", `{"model":"video-gen-1","prompt":"a harbour","duration":5}`)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		return r.field("id")
	}
	read := func(id string) {
		t.Helper()
		if r := call(t, "GET", base+"/v1/video/generations/"+id, "mg-generations", nil); r.status != 200 {
			t.Fatalf("retrieve = %d %s", r.status, r.body)
		}
	}
	failed := generate()
	balance("1.5", "0.5")
	fake.set(failed, "running")
	read(failed)
	balance("1.5", "0.5")
	fake.set(failed, "FAILED")
	read(failed)
	balance("2", "0")

	made := generate()
	fake.set(made, "succeeded")
	read(made)
	balance("1.5", "0")
}
