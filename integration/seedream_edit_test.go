package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// seedreamCaddyfile serves image edits of a Seedream model through a provider whose protocol is
// written out as ark: the strict fake of Ark's images/generations behind it, the client's model
// id mapped to Ark's, and the model priced per image so that an edit holds and settles.
const seedreamCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider seedream {
			base_url {{ark_url}}
			api_key ark-upstream-key
			protocol ark
			model_map seedream-4 doubao-seedream-4-0-250828
		}
		price seedream-4 {
			image 0.03
		}
		key mg-painter {
			account painter
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_image_edits /v1/images/*
		respond 404
	}
}
`

type seedreamGateway struct {
	base, admin string
	ark         *fakeArkImages
}

// startSeedreamGateway starts the gateway and credits painter with 1.00.
func startSeedreamGateway(t *testing.T) seedreamGateway {
	ark, arkURL := newFakeArkImages(t, "ark-upstream-key")
	base, g := startSimGateway(t, seedreamCaddyfile, map[string]string{"ark_url": arkURL})
	s := seedreamGateway{base: base, admin: "http://" + g.admin, ark: ark}
	creditAccount(t, s.admin, "painter", "1")
	return s
}

// creditAccount credits account with amount through the admin API at admin (http://host:port).
func creditAccount(t *testing.T, admin, account, amount string) {
	t.Helper()
	req, err := http.NewRequest("POST", admin+"/mediagw/accounts/"+account+"/credit", strings.NewReader(`{"amount":"`+amount+`","note":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "credit-"+account)
	if r := do(t, req); r.status != 200 {
		t.Fatalf("credit = %d %s", r.status, r.body)
	}
}

// ledger returns painter's ledger entries' kinds and amounts, and the balance's balance and held.
func (s seedreamGateway) ledger(t *testing.T) (kinds []string, amounts []any, balance, held string) {
	t.Helper()
	for _, e := range call(t, "GET", s.admin+"/mediagw/accounts/painter/ledger", "", nil).json(t)["entries"].([]any) {
		entry := e.(map[string]any)
		kinds = append(kinds, entry["kind"].(string))
		amounts = append(amounts, entry["amount"])
	}
	b := call(t, "GET", s.admin+"/mediagw/accounts/painter/balance", "", nil)
	return kinds, amounts, b.field("balance"), b.field("held")
}

// An edit with two input images reaches Ark as one images/generations call whose image is the
// list of the two URLs, with Ark's model id, the operator's key, n as a sequential set of at
// most 3, and only fields Ark documents. Ark made 2 images of the 3: the client gets them in the
// edit's shape, and the ledger shows the hold of 3 × 0.03 settled at 2 × 0.03. An edit of one
// image sends image as a string.
func TestSeedreamEditThroughArk(t *testing.T) {
	s := startSeedreamGateway(t)
	edit := `{"model":"seedream-4","prompt":"[fewer] put the cat in the garden","n":3,"size":"2048x2048","seed":42,"watermark":false,"quality":"high",
		"images":[{"image_url":"https://cdn.example.com/cat.png"},{"image_url":"https://cdn.example.com/garden.png"}]}`
	r := call(t, "POST", s.base+"/v1/images/edits", "mg-painter", edit)
	if r.status != 200 {
		t.Fatalf("edit = %d %s", r.status, r.body)
	}
	var answer struct {
		Created int64 `json:"created"`
		Data    []map[string]any
	}
	decodeJSON(t, []byte(r.body), &answer)
	if answer.Created == 0 || len(answer.Data) != 2 || len(answer.Data[0]) != 1 || !strings.HasPrefix(answer.Data[0]["url"].(string), s.ark.url+"/results/") {
		t.Fatalf("answer = %s; want created and two data items of one url each", r.body)
	}
	sent := s.ark.log.matching("POST", "/api/v3/images/generations")
	if len(sent) != 1 {
		t.Fatalf("Ark received %d generations, want 1", len(sent))
	}
	if got := sent[0].Header.Get("Authorization"); got != "Bearer ark-upstream-key" {
		t.Fatalf("Authorization = %q", got)
	}
	var got map[string]any
	decodeJSON(t, sent[0].Body, &got)
	want := map[string]any{
		"model": "doubao-seedream-4-0-250828", "prompt": "[fewer] put the cat in the garden",
		"image": []any{"https://cdn.example.com/cat.png", "https://cdn.example.com/garden.png"},
		"size":  "2048x2048", "seed": 42.0, "watermark": false, "response_format": "url",
		"sequential_image_generation": "auto", "sequential_image_generation_options": map[string]any{"max_images": 3.0},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Fatalf("Ark received %s\nwant %s", g, w)
	}
	kinds, amounts, balance, held := s.ledger(t)
	if strings.Join(kinds, ",") != "credit,hold,settle" || balance != "0.94" || held != "0" {
		t.Fatalf("ledger %v %v, balance %s held %s; want credit, hold, settle and 0.94 left", kinds, amounts, balance, held)
	}

	one := `{"model":"seedream-4","prompt":"make it blue","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`
	if r := call(t, "POST", s.base+"/v1/images/edits", "mg-painter", one); r.status != 200 {
		t.Fatalf("edit of one image = %d %s", r.status, r.body)
	}
	sent = s.ark.log.matching("POST", "/api/v3/images/generations")
	// A new map: decoding into got would keep the first body's members this one lacks.
	var gotOne map[string]any
	decodeJSON(t, sent[len(sent)-1].Body, &gotOne)
	wantOne := map[string]any{
		"model": "doubao-seedream-4-0-250828", "prompt": "make it blue", "image": "https://cdn.example.com/cat.png",
		"size": "2048x2048", "response_format": "url", "sequential_image_generation": "disabled",
	}
	if g, w := mustJSON(t, gotOne), mustJSON(t, wantOne); g != w {
		t.Fatalf("Ark received %s for one image\nwant %s", g, w)
	}
}

// Ark's refusal ({"error": {"code", "message"}}) reaches the client as the edit's error, in the
// OpenAI shape with Ark's code, and the hold is released: nothing is charged.
func TestSeedreamEditArkError(t *testing.T) {
	s := startSeedreamGateway(t)
	r := call(t, "POST", s.base+"/v1/images/edits", "mg-painter",
		`{"model":"seedream-4","prompt":"[fail] a forbidden scene","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`)
	e, _ := r.json(t)["error"].(map[string]any)
	if r.status != 400 || e == nil || e["code"] != "InputTextSensitiveContentDetected" || e["message"] != "the input text may contain sensitive information" {
		t.Fatalf("refused edit = %d %s; want 400 with Ark's code and message", r.status, r.body)
	}
	if n := len(s.ark.log.matching("POST", "/api/v3/images/generations")); n != 1 {
		t.Fatalf("Ark received %d generations, want 1", n)
	}
	kinds, amounts, balance, held := s.ledger(t)
	if strings.Join(kinds, ",") != "credit,hold,release" || balance != "1" || held != "0" {
		t.Fatalf("ledger %v %v, balance %s held %s; want credit, hold, release and 1 left", kinds, amounts, balance, held)
	}
}

// A non-public image URL, or a seed Ark would not take, is refused with 400 naming the field
// before anything is held or sent to Ark.
func TestSeedreamEditRefusedBeforeArk(t *testing.T) {
	s := startSeedreamGateway(t)
	for _, tc := range []struct{ body, param string }{
		{`{"model":"seedream-4","prompt":"p","images":[{"image_url":"https://cdn.example.com/cat.png"},{"image_url":"http://169.254.169.254/latest/meta-data/"}]}`, "images[1].image_url"},
		{`{"model":"seedream-4","prompt":"p","images":[{"image_url":"http://127.0.0.1:9/cat.png"}]}`, "images[0].image_url"},
		{`{"model":"seedream-4","prompt":"p","seed":"42","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`, "seed"},
		{`{"model":"seedream-4","prompt":"p","watermark":"no","images":[{"image_url":"https://cdn.example.com/cat.png"}]}`, "watermark"},
	} {
		r := call(t, "POST", s.base+"/v1/images/edits", "mg-painter", tc.body)
		e, _ := r.json(t)["error"].(map[string]any)
		if r.status != 400 || e == nil || e["param"] != tc.param {
			t.Errorf("%s = %d %s; want 400 naming %s", tc.body, r.status, r.body, tc.param)
		}
	}
	if n := s.ark.received(); n != 0 {
		t.Fatalf("Ark received %d requests, want none", n)
	}
	if kinds, _, balance, held := s.ledger(t); strings.Join(kinds, ",") != "credit" || balance != "1" || held != "0" {
		t.Fatalf("ledger %v, balance %s held %s; want the credit only", kinds, balance, held)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
