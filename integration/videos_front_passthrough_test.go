package integration

import (
	"strings"
	"testing"
)

// videosPassThroughCaddyfile serves /v1/videos through mediagw_videos, except for the sora
// provider (the simulator's OpenAI-style endpoints), which keeps pass-through.
const videosPassThroughCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider ark {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models doubao-seedance-1-0-pro-250528
		}
		provider sora {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-upstream-key
			models sora-2
		}
		key mg-alice {
			account alice
		}
		key mg-bob {
			account bob
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_videos /v1/videos* {
			passthrough sora
		}
		mediagw_route
		reverse_proxy 127.0.0.1:{{sim_port}}
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-upstream-key
	}
}
`

// TestVideosFrontPassThroughProvider: with passthrough sora, a sora-2 create goes through
// mediagw_route to the provider's own /v1/videos (its answer, its video_… id, recorded as
// alice's), and a read of that video is passed through too (the simulator's OpenAI videos API
// answers it); bob gets the front's unknown-id answer for it. A Seedance create in the same route
// is the front's: a video object of a task (a cgt-… id).
func TestVideosFrontPassThroughProvider(t *testing.T) {
	base, _ := startSimGateway(t, videosPassThroughCaddyfile, nil)
	r := call(t, "POST", base+"/v1/videos", "mg-alice", `{"model":"sora-2","prompt":"a cat"}`)
	native := r.field("id")
	if r.status != 200 || !strings.HasPrefix(native, "video_") {
		t.Fatalf("sora create = %d %s; want the provider's own answer", r.status, r.body)
	}
	read := call(t, "GET", base+"/v1/videos/"+native, "mg-alice", nil)
	if read.status != 200 || read.field("id") != native || read.json(t)["object"] != "video" {
		t.Fatalf("alice's read of her pass-through video = %d %s; want it passed to the provider", read.status, read.body)
	}
	theirs := call(t, "GET", base+"/v1/videos/"+native, "mg-bob", nil)
	unknown := call(t, "GET", base+"/v1/videos/video-sim-unknown", "mg-bob", nil)
	if theirs.status != 404 || string(theirs.body) != string(unknown.body) {
		t.Fatalf("bob's read of alice's pass-through video = %d %s; an unknown id's = %d %s", theirs.status, theirs.body, unknown.status, unknown.body)
	}
	r = call(t, "POST", base+"/v1/videos", "mg-alice", `{"model":"doubao-seedance-1-0-pro-250528","prompt":"a cat"}`)
	if r.status != 200 || r.json(t)["object"] != "video" || r.json(t)["status"] != "queued" || !strings.HasPrefix(r.field("id"), "cgt-") {
		t.Fatalf("seedance create = %d %s; want the front's video object", r.status, r.body)
	}
}

// TestVideosFrontCallbacks: a video created through the front with callback_url (mediagw's
// addition) is delivered to it as a task created through the task API is: signed, once per
// status, ending with succeeded, the body the task API's answer.
func TestVideosFrontCallbacks(t *testing.T) {
	rc := newReceiver(t, func(int) int { return 204 })
	caddyfile := strings.Replace(callbacksCaddyfile, "mediagw_video_tasks /api/v3/contents/generations/tasks*",
		"mediagw_video_tasks /api/v3/contents/generations/tasks*\n\t\tmediagw_videos /v1/videos*", 1)
	if caddyfile == callbacksCaddyfile {
		t.Fatal("callbacksCaddyfile no longer has the line this test extends")
	}
	base, _ := startSimGateway(t, caddyfile, map[string]string{"allow_private": "allow_private"})
	// A callback_url longer than 2048 bytes is refused in the front's error shape, naming the param.
	r := call(t, "POST", base+"/v1/videos", "mg-hooks", `{"model":"sim-video","prompt":"a kite","callback_url":"`+rc.URL+"/hook?t="+strings.Repeat("a", 2048)+`"}`)
	if e, _ := r.json(t)["error"].(map[string]any); r.status != 400 || e == nil || e["param"] != "callback_url" {
		t.Fatalf("a long callback_url = %d %s, want 400 naming callback_url", r.status, r.body)
	}
	r = call(t, "POST", base+"/v1/videos", "mg-hooks", `{"model":"sim-video","prompt":"a kite","callback_url":"`+rc.URL+`/hook"}`)
	id := r.field("id")
	if r.status != 200 || id == "" {
		t.Fatalf("create = %d %s", r.status, r.body)
	}
	waitFor(t, "the succeeded callback", func() bool {
		seen := rc.seen()
		return len(seen) > 0 && seen[len(seen)-1].status == "succeeded"
	})
	for _, d := range rc.seen() {
		if d.method != "POST" || d.signature == "" || !strings.Contains(string(d.body), `"id":"`+id+`"`) {
			t.Fatalf("delivery %+v (body %s)", d, d.body)
		}
	}
}
