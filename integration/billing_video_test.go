package integration

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

const billedVideoCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/api/v3
			api_key sim-upstream-key
			models sim-short-max sim-long-max
		}
		price sim-short-max {
			second 0.01
			max_seconds 3
		}
		price sim-long-max {
			second 0.01
		}
		key mg-videos {
			account videos
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

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		queued_for 500ms
		running_for 500ms
		api_key sim-upstream-key
	}
}
`

// TestTaskSettlesLongerAndShorterThanEstimated: two tasks of duration -1 (the model chooses;
// the simulator makes 5 s) are held at their price's max_seconds, 3 s and the default 15 s, and
// each settles at the 5 s the upstream reports: one came out longer than its hold, the other
// shorter. The usage report has each model's amount: 0.05 (held 0.03) and 0.05 (held 0.15).
func TestTaskSettlesLongerAndShorterThanEstimated(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	base, g := startSimGateway(t, billedVideoCaddyfile, nil)
	ids := map[string]string{}
	for _, model := range []string{"sim-short-max", "sim-long-max"} {
		r := call(t, "POST", base+taskPath, "mg-videos", `{"model":"`+model+`","content":[{"type":"text","text":"v"}],"duration":-1}`)
		if r.status != 200 || r.field("id") == "" {
			t.Fatalf("create %s = %d %s", model, r.status, r.body)
		}
		ids[model] = r.field("id")
	}
	from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, id := range ids { // the client's polls finish the tasks too
			call(t, "GET", base+taskPath+"/"+id, "mg-videos", nil)
		}
		r := call(t, "GET", "http://"+g.admin+"/mediagw/usage?format=csv&account=videos&group_by=model&from="+from+"&to="+to, "", nil)
		lines, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err == nil && len(lines) == 3 && lines[0][len(lines[0])-1] == "amount" &&
			lines[1][0] == "sim-long-max" && lines[1][len(lines[1])-1] == "0.05" &&
			lines[2][0] == "sim-short-max" && lines[2][len(lines[2])-1] == "0.05" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage report = %d %s; want each model charged 0.05, the 5 s the upstream made", r.status, r.body)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
