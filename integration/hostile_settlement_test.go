package integration

import (
	"encoding/csv"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/internal/money"
	"github.com/mediagw/mediagw/internal/testredis"
)

// hostileSettlementCaddyfile prices the scripted Ark upstream's video-h at 1 per million video
// tokens, on {{storage}}; the account has a balance.
const hostileSettlementCaddyfile = `{
	{{globals}}
	mediagw {
		{{storage}}
		provider ark-hostile {
			base_url {{up_url}}/api/v3
			api_key hostile-up-key
			models video-h
		}
		provider wan-hostile {
			base_url {{up_url}}/api/v1
			api_key hostile-up-key
			protocol dashscope
			models wan-h
		}
		price video-h {
			video_tokens 1
		}
		price wan-h {
			second 720p 0.01
			second 1080p 0.02
		}
		key mg-hostile-settle {
			account hostile-settle
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_video_tasks /api/v3/contents/generations/tasks* {
			refresh_interval 10ms
		}
		respond 404
	}
}
`

// settlementStory is what a hostile upstream answers a task's reads, in turn (each answer
// stands until the task's status reads as its status), and what the task must be charged.
type settlementStory struct {
	name    string
	wan     bool     // a DashScope (Wan) task of wan-h, not an Ark one of video-h
	answers []string // bodies; %[1]s is the task id
	charged string   // what the task's hold settles at ("0": released)
}

// The task of every story is a 5-second 720p 16:9 video: for Ark, its published 1248×704 at 24
// fps, 102,960 video tokens, 0.10296 at 1 per million; for Wan, 0.05 at 0.01 a second. Each is
// also the task's estimate.
const okVideo = `"status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4"},"duration":5,"resolution":"720p","ratio":"16:9","framespersecond":24`

var settlementStories = []settlementStory{
	{"honest", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960,"total_tokens":102960}}`}, "0.10296"},
	{"completion_tokens twice", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960,"completion_tokens":99999999}}`}, "0.10296"},
	// A name given twice is answered to the client once, with its last value (what a decoder
	// keeps): the task is charged as that answer says, within twice the video it reports.
	{"completion_tokens twice, within twice the video", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960,"completion_tokens":200000}}`}, "0.2"},
	{"completion_tokens in another case", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960,"Completion_Tokens":99999999}}`}, "0.10296"},
	{"usage twice in another case", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960},"USAGE":{"completion_tokens":99999999}}`}, "0.10296"},
	{"tokens past the video it reports", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":99999999}}`}, "0.10296"},
	{"negative tokens", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":-102960}}`}, "0.10296"},
	{"fractional tokens", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960.5}}`}, "0.10296"},
	{"string tokens", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":"99999999"}}`}, "0.10296"},
	{"usage on a failed task", false, []string{`{"id":"%[1]s","status":"failed","error":{"code":"X","message":"no"},"duration":5,"usage":{"completion_tokens":102960}}`}, "0"},
	{"succeeded, then failed", false, []string{`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960}}`,
		`{"id":"%[1]s","status":"failed","error":{"code":"X","message":"no"}}`}, "0.10296"},
	{"failed, then succeeded", false, []string{`{"id":"%[1]s","status":"failed","error":{"code":"X","message":"no"}}`,
		`{"id":"%[1]s",` + okVideo + `,"usage":{"completion_tokens":102960}}`}, "0"},
	{"wan honest", true, []string{wanDone(`"video_duration":5,"video_ratio":"1280*720"`)}, "0.05"},
	{"wan longer than asked", true, []string{wanDone(`"video_duration":10,"video_ratio":"1280*720"`)}, "0.1"},
	{"wan video_duration twice", true, []string{wanDone(`"video_duration":5,"video_duration":15,"video_ratio":"1280*720"`)}, "0.15"},
	{"wan negative seconds", true, []string{wanDone(`"video_duration":-5,"video_ratio":"1280*720"`)}, "0.05"},
	{"wan seconds a string", true, []string{wanDone(`"video_duration":"15","video_ratio":"1280*720"`)}, "0.15"},
	{"wan fractional seconds", true, []string{wanDone(`"video_duration":5.5,"video_ratio":"1280*720"`)}, "0.05"},
	// 4k, which the price names no band for: its highest band, 1080p (docs/billing.md).
	{"wan past the price table", true, []string{wanDone(`"video_duration":5,"video_ratio":"3840*2160"`)}, "0.1"},
	{"wan usage on a failed task", true, []string{`{"request_id":"r","output":{"task_id":"%[1]s","task_status":"FAILED","code":"X","message":"no"},"usage":{"video_duration":5,"video_ratio":"1280*720"}}`}, "0"},
	{"wan succeeded, then failed", true, []string{wanDone(`"video_duration":5,"video_ratio":"1280*720"`),
		`{"request_id":"r","output":{"task_id":"%[1]s","task_status":"FAILED","code":"X","message":"no"}}`}, "0.05"},
}

// wanDone is a DashScope answer of a succeeded task with the usage members given.
func wanDone(usage string) string {
	return `{"request_id":"r","output":{"task_id":"%[1]s","task_status":"SUCCEEDED","video_url":"https://cdn.example.com/w.mp4"},"usage":{` + usage + `}}`
}

// TestHostileSettlementOnBothStores: a hostile Ark or DashScope upstream's answers (usage numbers
// repeated, in another case, wildly past the video the same answer reports, negative, fractional
// or a string; a picture past the price table; usage on a failed task; a status that flips) settle each task once, at what the answer
// honestly says, on Badger and on Redis alike: each hold ends once, a failed task is charged
// nothing, the balance is the sum of the ledger, and both stores write the same ledger.
func TestHostileSettlementOnBothStores(t *testing.T) {
	redis := testredis.Start(t, testredis.Options{})
	ledgers := map[string][]string{}
	for _, store := range []struct{ name, line string }{
		{"badger", "storage badger " + t.TempDir()},
		{"redis", "storage redis " + redis.URL() + " {\n\t\t\tkey_prefix hostilesettle\n\t\t}"},
	} {
		t.Run(store.name, func(t *testing.T) {
			up := &scriptedUpstream{answers: map[string]string{}}
			srv := startFake(t, up)
			base, g := startSimGateway(t, hostileSettlementCaddyfile, map[string]string{"storage": store.line, "up_url": srv.URL})
			e := keysEnv{g: g}
			e.credit(t, "hostile-settle", "1000", "hs-1")
			for _, s := range settlementStories {
				model := "video-h"
				if s.wan {
					model = "wan-h"
				}
				r := call(t, "POST", base+taskPath, "mg-hostile-settle", `{"model":"`+model+`","content":[{"type":"text","text":"v"}],"duration":5,"resolution":"720p","ratio":"16:9"}`)
				id := r.field("id")
				if r.status != 200 || id == "" {
					t.Fatalf("%s: create = %d %s", s.name, r.status, r.body)
				}
				upstreamID := id // an Ark task's id is the upstream's
				if s.wan {
					upstreamID = up.lastDash()
				}
				for i, answer := range s.answers {
					up.set(upstreamID, fmt.Sprintf(answer, upstreamID))
					want := "succeeded"
					if strings.Contains(answer, `"status":"failed"`) || strings.Contains(answer, `"FAILED"`) {
						want = "failed"
					}
					deadline := time.Now().Add(30 * time.Second)
					for i == 0 {
						if r := call(t, "GET", base+taskPath+"/"+id, "mg-hostile-settle", nil); r.field("status") == want {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("%s: not %s after 30 s", s.name, want)
						}
						time.Sleep(20 * time.Millisecond)
					}
					if i > 0 {
						// The flipped answer is read by polls and the watcher for a while.
						for range 5 {
							call(t, "GET", base+taskPath+"/"+id, "mg-hostile-settle", nil)
							time.Sleep(30 * time.Millisecond)
						}
					}
				}
			}
			deadline := time.Now().Add(30 * time.Second)
			for e.admin(t, "GET", "/mediagw/accounts/hostile-settle/balance", nil).field("held") != "0" {
				if time.Now().After(deadline) {
					t.Fatal("holds still open after 30 s")
				}
				time.Sleep(50 * time.Millisecond)
			}
			// The stories' holds were taken one after another, in the stories' order.
			story := map[string]string{} // by hold id
			held, charged := map[string]int64{}, map[string]string{}
			ends := map[string]int{}
			var ledger []string
			for _, entry := range ledgerEntries(t, g, "hostile-settle") {
				kind, hold := fmt.Sprint(entry["kind"]), fmt.Sprint(entry["hold_id"])
				if kind == "credit" {
					continue
				}
				amount, err := money.Parse(fmt.Sprint(entry["amount"]))
				if err != nil {
					t.Fatal(err)
				}
				if kind == "hold" && story[hold] == "" && len(story) < len(settlementStories) {
					story[hold] = settlementStories[len(story)].name
				}
				name := story[hold]
				ledger = append(ledger, fmt.Sprintf("%s: %s %s", name, kind, entry["amount"]))
				switch kind {
				case "hold":
					held[name] -= amount
				case "settle", "release":
					ends[name]++
					charged[name] = money.Format(held[name] - amount)
				}
			}
			// Each story's entries in their order, the stories one after another: a story's end
			// is written when whoever finished its task (the watcher or a query) settles it, which
			// may come after the next story's hold, on one store and not on the other.
			ledgers[store.name] = slices.Clone(ledger)
			slices.SortStableFunc(ledgers[store.name], func(a, b string) int {
				return strings.Compare(a[:strings.Index(a, ": ")], b[:strings.Index(b, ": ")])
			})
			perModel := map[string]int64{}
			for _, s := range settlementStories {
				if ends[s.name] != 1 {
					t.Errorf("%s: its hold ended %d times; want once", s.name, ends[s.name])
				}
				if charged[s.name] != s.charged {
					t.Errorf("%s: charged %s; want %s", s.name, charged[s.name], s.charged)
				}
				amount, _ := money.Parse(s.charged)
				perModel[map[bool]string{false: "video-h", true: "wan-h"}[s.wan]] += amount
			}
			// The usage report says the same money as the ledger, model by model.
			from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
			deadline = time.Now().Add(30 * time.Second)
			for {
				r := call(t, "GET", "http://"+g.admin+"/mediagw/usage?format=csv&account=hostile-settle&group_by=model&from="+from+"&to="+to, "", nil)
				lines, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
				amounts := map[string]string{}
				for _, l := range lines[min(len(lines), 1):] {
					amounts[l[0]] = l[len(l)-1]
				}
				if err == nil && amounts["video-h"] == money.Format(perModel["video-h"]) && amounts["wan-h"] == money.Format(perModel["wan-h"]) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("usage = %d %s; want video-h %s and wan-h %s, as the ledger", r.status, r.body, money.Format(perModel["video-h"]), money.Format(perModel["wan-h"]))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if t.Failed() {
				t.Logf("ledger: %q", ledger)
			}
		})
	}
	if b, r := strings.Join(ledgers["badger"], "\n"), strings.Join(ledgers["redis"], "\n"); b != r {
		t.Errorf("the stores wrote different ledgers for the same story:\nbadger:\n%s\nredis:\n%s", b, r)
	}
}
