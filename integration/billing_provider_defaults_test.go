package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHoldCountsTheVideoTheProviderMakes: a task whose provider makes a longer or larger video
// than the request names is held for that video, so that the hold is not below the settlement.
// Veo makes 8 s when asked for no length (held at the contract's 5 s before: 0.05, settled 0.08
// over it), Hailuo 6 s when asked for 5 (0.05, then 0.06), Kling its std mode's 720p when asked
// for 480p (0.025 at 480p's price, then 0.05), Wan 2.2 1080p where the contract's default 720p
// is asked for and the model offers 480P and 1080P only (0.05, then 0.10). Each is now held what
// it settles at, created with the Ark SDK or the contract's body against the providers' strict
// fakes.
func TestHoldCountsTheVideoTheProviderMakes(t *testing.T) {
	t.Parallel()
	cfg := strings.Replace(videoProvidersCaddyfile, "\t\tkey mg-alice {", `		price veo-client {
			second 0.01
		}
		price MiniMax-Hailuo-02 {
			second 0.01
		}
		price kling-v2-1-master {
			second 0.01
			second 480p 0.005
		}
		price wan2.2-t2v-plus {
			second 0.01
			second 1080p 0.02
		}
		key mg-alice {`, 1)
	if cfg == videoProvidersCaddyfile {
		t.Fatal("the video providers' Caddyfile changed shape")
	}
	v := startVideoProvidersWith(t, cfg)

	if got := v.sdkTask(t, "veo-client", "a lighthouse at dawn"); got.Status != "succeeded" {
		t.Fatalf("the Veo task ended %s", got.Status)
	}
	for _, body := range []map[string]any{
		{"model": "MiniMax-Hailuo-02", "duration": 5, "content": []any{map[string]any{"type": "text", "text": "a fox"}}},
		{"model": "kling-v2-1-master", "resolution": "480p", "content": []any{map[string]any{"type": "text", "text": "a fox"}}},
		{"model": "wan2.2-t2v-plus", "ratio": "9:16", "content": []any{map[string]any{"type": "text", "text": "a fox"}}},
	} {
		if got := pollUntil(t, v.alice, v.createWith(t, body)); got.Status != "succeeded" {
			t.Fatalf("the %s task ended %s", body["model"], got.Status)
		}
	}

	// A task shows succeeded once its record says so; whoever finished it (the watcher, or a
	// client's query) settles its hold just after: the ledger is read until every task's hold
	// has ended.
	want := map[string]string{
		"veo-client":        "hold -0.08; settle 0; ",
		"MiniMax-Hailuo-02": "hold -0.06; settle 0; ",
		"kling-v2-1-master": "hold -0.05; settle 0; ",
		"wan2.2-t2v-plus":   "hold -0.1; settle 0; ",
	}
	var got map[string]string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var page struct {
			Entries []struct {
				Kind, Model, Amount string
				Note                *string
			}
		}
		decodeJSON(t, call(t, "GET", "http://"+v.admin+"/mediagw/accounts/alice/ledger", "", nil).body, &page)
		got = map[string]string{}
		ends := 0
		for _, e := range page.Entries {
			note := ""
			if e.Note != nil {
				note = " (" + *e.Note + ")"
			}
			got[e.Model] += fmt.Sprintf("%s %s%s; ", e.Kind, e.Amount, note)
			if e.Kind == "settle" || e.Kind == "release" { // not a credit or an adjustment
				ends++
			}
		}
		if ends >= len(want) || time.Now().After(deadline) {
			break
		}
	}
	for model, want := range want {
		if got[model] != want {
			t.Errorf("%s's ledger: %q, want %q", model, got[model], want)
		}
	}
}
