package integration

import (
	"slices"
	"strings"
	"testing"
)

// TestSoraSecondsAsSent: OpenAI's videos API takes 4, 8 or 12 seconds, so the gateway sends the
// nearest of them (the longer of two equally near) and every answer reports that length from the
// create on, before the provider reports one: a /v1/videos create without seconds (the
// contract's 5) is sent none and is the API's default 4 s; "6" is sent and answered as "8"; an
// Ark task of duration 5 is sent "4". The hold covers the length sent (8 s at 0.01 a second for
// "6", where the request alone would hold 6 s), and each video settles at the 4 or 8 s made.
func TestSoraSecondsAsSent(t *testing.T) {
	cfg := strings.Replace(withVideosFront(t, videoProvidersCaddyfile), "\t\tkey mg-alice {", "\t\tprice sora-2 {\n\t\t\tsecond 0.01\n\t\t}\n\t\tkey mg-alice {", 1)
	if !strings.Contains(cfg, "price sora-2") {
		t.Fatal("the video providers' Caddyfile changed shape")
	}
	v := startVideoProvidersWith(t, cfg)
	front := videosFront{base: v.base}

	for _, c := range []struct{ body, sent, answered string }{
		{`{"model":"sora-2","prompt":"a slow pond [slow]"}`, "", "4"},
		{`{"model":"sora-2","prompt":"a heron","seconds":"6"}`, "8", "8"},
	} {
		before := len(v.openai.log.matching("POST", "/v1/videos"))
		r := call(t, "POST", v.base+"/v1/videos", "mg-alice", c.body)
		if r.status != 200 || r.field("seconds") != c.answered {
			t.Fatalf("create %s = %d %s; want seconds %q", c.body, r.status, r.body, c.answered)
		}
		creates := v.openai.log.matching("POST", "/v1/videos")
		if len(creates) != before+1 {
			t.Fatalf("create %s: %d upstream creates", c.body, len(creates)-before)
		}
		var sent struct{ Seconds *string }
		decodeJSON(t, creates[before].Body, &sent)
		if got := deref(sent.Seconds); got != c.sent {
			t.Fatalf("create %s: sent seconds %q, want %q", c.body, got, c.sent)
		}
		id := r.field("id")
		if got := call(t, "GET", v.base+"/v1/videos/"+id, "mg-alice", nil); got.field("seconds") != c.answered {
			t.Fatalf("retrieve %s = %s; want seconds %q", id, got.body, c.answered)
		}
		var list struct {
			Data []struct{ ID, Seconds string }
		}
		decodeJSON(t, call(t, "GET", v.base+"/v1/videos", "mg-alice", nil).body, &list)
		if i := slices.IndexFunc(list.Data, func(d struct{ ID, Seconds string }) bool { return d.ID == id }); i < 0 || list.Data[i].Seconds != c.answered {
			t.Fatalf("list = %+v; want %s with seconds %q", list.Data, id, c.answered)
		}
		if c.sent != "" {
			if done := front.finished(t, id); done["seconds"] != c.answered {
				t.Fatalf("finished %s = %v", id, done)
			}
		}
	}

	before := len(v.openai.log.matching("POST", "/v1/videos"))
	v.createWith(t, map[string]any{"model": "sora-2", "duration": 5, "content": []any{map[string]any{"type": "text", "text": "a fox"}}})
	creates := v.openai.log.matching("POST", "/v1/videos")
	if len(creates) != before+1 || !strings.Contains(string(creates[before].Body), `"seconds":"4"`) {
		t.Fatalf("the Ark task's create: %+v", creates[before:])
	}

	var page struct {
		Entries []struct{ Kind, Model, Amount string }
	}
	decodeJSON(t, call(t, "GET", "http://"+v.admin+"/mediagw/accounts/alice/ledger", "", nil).body, &page)
	var holds []string
	for _, e := range page.Entries {
		if e.Kind == "hold" && e.Model == "sora-2" {
			holds = append(holds, e.Amount)
		}
	}
	slices.Sort(holds)
	if want := []string{"-0.05", "-0.05", "-0.08"}; !slices.Equal(holds, want) {
		t.Fatalf("sora-2 holds %v, want %v (5 s, 5 s and the 8 s sent for 6)", holds, want)
	}
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
