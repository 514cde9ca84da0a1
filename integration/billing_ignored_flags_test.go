package integration

import (
	"testing"
	"time"
)

// veoPricedCaddyfile prices Veo 3 through the Gemini API as docs/billing.md's example does
// (second 0.40, audio 1.5, draft 0.5).
const veoPricedCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider google {
			base_url {{gemini_url}}
			api_key gemini-upstream-key
			protocol gemini
			models veo-3.0-generate-001
		}
		price veo-3.0-generate-001 {
			second 0.40
			audio 1.5
			draft 0.5
		}
		key mg-veo {
			account veo-buyer
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 100ms
		}
		respond 404
	}
}
`

// TestFieldsTheAdaptorIgnoresDoNotChangeTheCharge: the gemini adaptor sends Veo neither `draft`,
// `generate_audio` nor `frames` (docs/video-providers.md), so Veo makes the same 8-second video
// with sound whatever they say, and each task is charged that video: 8 × 0.40 × 1.5 = 4.8. Before
// the fix, "draft": true with "generate_audio": false was held and charged 1.6, a third.
func TestFieldsTheAdaptorIgnoresDoNotChangeTheCharge(t *testing.T) {
	_, gemURL := newFakeGemini(t, "gemini-upstream-key")
	base, g := startSimGateway(t, veoPricedCaddyfile, map[string]string{"gemini_url": gemURL})
	tasks := base + "/api/v3/contents/generations/tasks"
	const prompt = `{"model":"veo-3.0-generate-001","content":[{"type":"text","text":"a lighthouse"}],"duration":8`
	bodies := map[string]string{
		"plain":              prompt + `}`,
		"draft, no audio":    prompt + `,"draft":true,"generate_audio":false}`,
		"frames 29 (1.2 s)":  prompt + `,"frames":29}`,
		"draft, audio named": prompt + `,"draft":true,"generate_audio":true}`,
	}
	names := map[string]string{} // task id → case
	for name, body := range bodies {
		r := call(t, "POST", tasks, "mg-veo", body)
		if r.status != 200 {
			t.Fatalf("%s: create = %d %s", name, r.status, r.body)
		}
		names[r.field("id")] = name
	}
	deadline := time.Now().Add(30 * time.Second)
	for id, name := range names {
		for {
			r := call(t, "GET", tasks+"/"+id, "mg-veo", nil)
			if s := r.field("status"); s == "succeeded" {
				break
			} else if s == "failed" || time.Now().After(deadline) {
				t.Fatalf("%s: task %s = %d %s", name, id, r.status, r.body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// A settlement names the task; its hold entry, written before the task existed, the hold.
	// Whoever finished a task settles it just after its record shows succeeded.
	entries := endsOfHolds(t, g, "veo-buyer", len(bodies))
	held, charged, holdCase := map[string]string{}, map[string]string{}, map[string]string{}
	for _, e := range entries {
		if ref, _ := e["ref"].(string); e["kind"] == "settle" {
			charged[names[ref]], _ = e["charged"].(string)
			holdCase[e["hold_id"].(string)] = names[ref]
		}
	}
	for _, e := range entries {
		if id, _ := e["hold_id"].(string); e["kind"] == "hold" && holdCase[id] != "" {
			held[holdCase[id]], _ = e["amount"].(string)
		}
	}
	for name := range bodies {
		if held[name] != "-4.8" || charged[name] != "4.8" {
			t.Errorf("%s: held %q and charged %q; want -4.8 and 4.8, the 8 s video with sound Veo made", name, held[name], charged[name])
		}
	}
}
