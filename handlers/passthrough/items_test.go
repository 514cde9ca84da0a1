package passthrough

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/storage"
)

// itemOwner returns the account that owns an item id in store, "" for none.
func itemOwner(t *testing.T, store Owners, id string) string {
	t.Helper()
	owners, err := store.ItemOwners(context.Background(), []string{id})
	if err != nil {
		t.Fatal(err)
	}
	account, _ := itemRecordOwner(owners[0])
	return account
}

// claimsSeen wraps cw's claim: it counts the store writes and keeps what the client had been
// sent when each began.
func claimsSeen(cw *CreatedWriter, w *httptest.ResponseRecorder) *[]string {
	var seen []string
	claim := cw.claim
	cw.claim = func(ids []string) error {
		seen = append(seen, w.Body.String())
		return claim(ids)
	}
	return &seen
}

func sse(events ...string) []string {
	out := make([]string, len(events))
	for i, e := range events {
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(e), &v); err != nil {
			panic(err)
		}
		out[i] = "event: " + v.Type + "\ndata: " + e + "\n\n"
	}
	return out
}

// The items of every answer a caller receives are recorded as its account's, in one write per
// answer, before the answer's end reaches it: a JSON create, a streamed create, a background
// response read later (JSON and streamed), a cancel and an input_items listing.
func TestItemsOfAnswersAreRecorded(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	p, _ := rt.Catalog.ProviderFor("doubao")
	create := Route{Model: "doubao", Provider: p, Creates: KindResponse, RevealsItems: true}
	read := Route{Model: "doubao", Provider: p, RevealsItems: true}

	// A JSON create: held, the response and its items recorded, then sent.
	w := httptest.NewRecorder()
	cw := rt.Created(w, httptest.NewRequest("POST", "/v1/responses", nil), acme, create)
	seen := claimsSeen(cw, w)
	answer := `{"id":"resp_j","object":"response","output":[{"type":"reasoning","id":"rs_j","summary":[]},{"type":"message","id":"msg_j","role":"assistant","content":[{"type":"output_text","text":"{\"id\":\"msg_fake\"}"}]}]}`
	proxyTo(cw, "application/json", answer[:40], answer[40:])
	cw.Finish()
	if w.Body.String() != answer || len(*seen) != 1 || (*seen)[0] != "" {
		t.Fatalf("answer %q, claims seen %q", w.Body, *seen)
	}
	for id, want := range map[string]string{"rs_j": "acme", "msg_j": "acme", "msg_fake": "", "resp_j": ""} {
		if got := itemOwner(t, store, id); got != want {
			t.Fatalf("item %s owned by %q, want %q", id, got, want)
		}
	}
	if rec, err := store.Task(context.Background(), "resp_j"); err != nil || rec.Account != "acme" {
		t.Fatalf("response record %+v, %v", rec, err)
	}

	// A streamed create: events pass as they come; the items are recorded in one write before
	// the terminal event, including one that only the terminal event names.
	stream := sse(
		`{"type":"response.created","response":{"id":"resp_s","status":"in_progress","output":[]}}`,
		`{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_s","summary":[]}}`,
		`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_s","summary":[]}}`,
		`{"type":"response.output_item.added","output_index":1,"item":{"type":"message","id":"msg_s","content":[]}}`,
		`{"type":"response.output_text.delta","item_id":"msg_s","output_index":1,"content_index":0,"delta":"\"id\""}`,
		`{"type":"response.completed","response":{"id":"resp_s","status":"completed","output":[{"id":"rs_s"},{"id":"msg_s"},{"id":"fc_s"}]}}`,
	)
	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("POST", "/v1/responses", nil), acme, create)
	seen = claimsSeen(cw, w)
	proxyTo(cw, "text/event-stream", stream...)
	cw.Finish()
	if w.Body.String() != strings.Join(stream, "") {
		t.Fatalf("stream changed: %q", w.Body)
	}
	if len(*seen) != 1 || (*seen)[0] != strings.Join(stream[:5], "") {
		t.Fatalf("%d claims; the client had %q at the first", len(*seen), *seen)
	}
	for _, id := range []string{"rs_s", "msg_s", "fc_s"} {
		if got := itemOwner(t, store, id); got != "acme" {
			t.Fatalf("item %s owned by %q", id, got)
		}
	}

	// The same stream written byte by byte: the terminal event never reaches the client before
	// its items are recorded.
	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("POST", "/v1/responses", nil), acme, create)
	seen = claimsSeen(cw, w)
	whole := strings.ReplaceAll(strings.ReplaceAll(strings.Join(stream, ""), "_s", "_b"), "\n", "\r\n")
	cw.Header().Set("Content-Type", "text/event-stream")
	cw.WriteHeader(200)
	for i := range len(whole) {
		if _, err := cw.Write([]byte{whole[i]}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(w.Body.String(), "response.completed") && itemOwner(t, store, "fc_b") != "acme" {
			t.Fatal("the terminal event reached the client before its items were recorded")
		}
	}
	cw.Finish()
	if w.Body.String() != whole || len(*seen) != 1 {
		t.Fatalf("stream changed (%d claims): %q", len(*seen), w.Body)
	}

	// A background response has no items at create; they come with GET, its streamed resume,
	// and cancel; input_items lists the input's.
	for _, tc := range []struct {
		name, contentType string
		chunks            []string
		ids               []string
	}{
		{"background create", "application/json", []string{`{"id":"resp_bg","status":"queued","background":true,"output":[]}`}, nil},
		{"retrieve", "application/json", []string{`{"id":"resp_bg","status":"completed","output":[{"type":"reasoning","id":"rs_bg"},{"type":"message","id":"msg_bg"}]}`}, []string{"rs_bg", "msg_bg"}},
		{"streamed retrieve", "text/event-stream", sse(
			`{"type":"response.output_item.added","item":{"id":"fc_bg","type":"function_call"}}`,
			`{"type":"response.completed","response":{"id":"resp_bg","output":[{"id":"fc_bg"},{"id":"ig_bg"}]}}`), []string{"fc_bg", "ig_bg"}},
		{"cancel", "application/json", []string{`{"id":"resp_bg","status":"cancelled","output":[{"type":"message","id":"msg_cancel"}]}`}, []string{"msg_cancel"}},
		{"input items", "application/json", []string{`{"object":"list","data":[{"type":"message","id":"msg_in","role":"user"}],"has_more":false}`}, []string{"msg_in"}},
		{"a stream cut before its terminal event", "text/event-stream", []string{"data: {\"type\":\"response.output_item.added\",\"item\":{\"id\":\"msg_cut\"}}\n\n", "data: {\"type\":\"response.output_item.done\",\"item\":{\"id\":\"msg_cut2\"}}"}, []string{"msg_cut", "msg_cut2"}},
	} {
		route := read
		if tc.name == "background create" {
			route = create
		}
		w := httptest.NewRecorder()
		cw := rt.Created(w, httptest.NewRequest("GET", "/v1/responses/resp_bg", nil), acme, route)
		seen := claimsSeen(cw, w)
		proxyTo(cw, tc.contentType, tc.chunks...)
		cw.Finish()
		if w.Body.String() != strings.Join(tc.chunks, "") {
			t.Fatalf("%s: answer changed: %q", tc.name, w.Body)
		}
		if want := min(len(tc.ids), 1); len(*seen) != want {
			t.Fatalf("%s: %d store writes, want %d", tc.name, len(*seen), want)
		}
		for _, id := range tc.ids {
			if got := itemOwner(t, store, id); got != "acme" {
				t.Fatalf("%s: item %s owned by %q", tc.name, id, got)
			}
		}
	}

	// Reading the same answer again is not a takeover and changes nothing.
	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("GET", "/v1/responses/resp_bg", nil), acme, read)
	proxyTo(cw, "application/json", `{"id":"resp_bg","output":[{"id":"rs_bg"}]}`)
	cw.Finish()
	if w.Code != 200 || itemOwner(t, store, "rs_bg") != "acme" {
		t.Fatalf("second read: %d %q", w.Code, w.Body)
	}
}

// An answer that hands one account items another account owns (an upstream whose item ids are
// not unique) still reaches it, but the items keep their first owner: the second account cannot
// use them by id.
func TestItemsOfAnotherAccountKeepTheirOwner(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	if _, err := store.ClaimItems(context.Background(), "acme", []string{"rs_a", "msg_a"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	other := auth.Identity{Account: "other", KeyID: "k2"}
	p, _ := rt.Catalog.ProviderFor("doubao")
	read := Route{Model: "doubao", Provider: p, RevealsItems: true}
	for _, tc := range []struct {
		contentType string
		chunks      []string
	}{
		{"application/json", []string{`{"id":"resp_x","output":[{"id":"msg_new"},{"id":"rs_a"}]}`}},
		{"text/event-stream", sse(`{"type":"response.output_item.added","item":{"id":"msg_a"}}`, `{"type":"response.completed","response":{"id":"resp_x","output":[{"id":"msg_a"},{"id":"fc_new"}]}}`)},
	} {
		w := httptest.NewRecorder()
		cw := rt.Created(w, httptest.NewRequest("GET", "/v1/responses/resp_x", nil), other, read)
		proxyTo(cw, tc.contentType, tc.chunks...)
		cw.Finish()
		if w.Code != 200 || w.Body.String() != strings.Join(tc.chunks, "") {
			t.Fatalf("answer %d %q", w.Code, w.Body)
		}
	}
	for id, want := range map[string]string{"rs_a": "acme", "msg_a": "acme", "msg_new": "other", "fc_new": "other"} {
		if got := itemOwner(t, store, id); got != want {
			t.Fatalf("item %s owned by %q, want %s", id, got, want)
		}
	}
	r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","input":[{"type":"reasoning","id":"rs_a"}]}`))
	r.Header.Set("Content-Type", "application/json")
	if _, err := rt.Route(httptest.NewRecorder(), r, other); err == nil {
		t.Fatal("the second account used an item recorded for the first")
	}
}

// When the store cannot record the items, the answer is withheld: a JSON answer becomes a 500
// without the ids, a stream ends before its terminal event.
func TestItemsUnrecordedWithholdTheAnswer(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	p, _ := rt.Catalog.ProviderFor("doubao")
	read := Route{Model: "doubao", Provider: p, RevealsItems: true}
	failing := func(cw *CreatedWriter) { cw.claim = func([]string) error { return errors.New("store down") } }

	w := httptest.NewRecorder()
	cw := rt.Created(w, httptest.NewRequest("GET", "/v1/responses/resp_x", nil), acme, read)
	failing(cw)
	proxyTo(cw, "application/json", `{"id":"resp_x","output":[{"id":"rs_x"}]}`)
	cw.Finish()
	if w.Code != 500 || strings.Contains(w.Body.String(), "rs_x") {
		t.Fatalf("answer %d %q", w.Code, w.Body)
	}

	w = httptest.NewRecorder()
	cw = rt.Created(w, httptest.NewRequest("GET", "/v1/responses/resp_x", nil), acme, read)
	failing(cw)
	events := sse(`{"type":"response.output_item.added","item":{"id":"msg_x"}}`, `{"type":"response.completed","response":{"id":"resp_x","output":[{"id":"msg_x"}]}}`)
	cw.Header().Set("Content-Type", "text/event-stream")
	cw.WriteHeader(200)
	if _, err := io.WriteString(cw, events[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(cw, events[1]); err == nil {
		t.Fatal("the terminal event was taken although its items could not be recorded")
	}
	cw.Finish()
	if w.Body.String() != events[0] {
		t.Fatalf("stream %q", w.Body)
	}
}

// An event too large to read passes through whole; the items collected before it are recorded
// before its first byte goes, and the events after it are read again.
func TestItemsAroundAnOversizedEvent(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop()}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	p, _ := rt.Catalog.ProviderFor("doubao")
	create := Route{Model: "doubao", Provider: p, Creates: KindResponse, RevealsItems: true}
	big := strings.Repeat("A", 2*maxPendingEvent)
	events := sse(
		`{"type":"response.created","response":{"id":"resp_big","output":[]}}`,
		`{"type":"response.output_item.added","item":{"id":"ig_big","type":"image_generation_call"}}`,
		`{"type":"response.output_item.done","item":{"id":"ig_big","type":"image_generation_call","result":"`+big+`"}}`,
		`{"type":"response.output_item.added","item":{"id":"msg_big","type":"message"}}`,
		`{"type":"response.completed","response":{"id":"resp_big","output":[{"id":"ig_big","result":"`+big+`"},{"id":"msg_big"}]}}`,
	)
	w := httptest.NewRecorder()
	cw := rt.Created(w, httptest.NewRequest("POST", "/v1/responses", nil), acme, create)
	seen := claimsSeen(cw, w)
	var chunks []string
	for _, e := range events {
		for len(e) > 0 { // the proxy's 32 KiB buffer
			n := min(len(e), 32<<10)
			chunks = append(chunks, e[:n])
			e = e[n:]
		}
	}
	proxyTo(cw, "text/event-stream", chunks...)
	cw.Finish()
	if w.Body.String() != strings.Join(events, "") {
		t.Fatalf("stream changed (%d bytes, want %d)", w.Body.Len(), len(strings.Join(events, "")))
	}
	// One write before the first oversized event (ig_big), one at the second (msg_big).
	if len(*seen) != 2 || (*seen)[0] != strings.Join(events[:2], "") || (*seen)[1] != strings.Join(events[:4], "") {
		t.Fatalf("%d claims", len(*seen))
	}
	for _, id := range []string{"ig_big", "msg_big"} {
		if itemOwner(t, store, id) != "acme" {
			t.Fatalf("item %s not recorded", id)
		}
	}
}

// Every input item that carries an id must name an item of the caller's account, whatever its
// type and however its keys are spelled; an unknown id and another account's get the same
// answer, and an accepted body reaches the upstream byte for byte.
func TestInputItemsMustBeOwned(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store}
	exp := time.Now().Add(time.Hour)
	if _, err := store.ClaimItems(context.Background(), "acme", []string{"rs_mine", "msg_mine", "fc_mine", "mcpr_mine"}, exp); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ClaimItems(context.Background(), "other", []string{"rs_theirs", "msg_theirs", "mcpr_theirs"}, exp); err != nil {
		t.Fatal(err)
	}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	otherKey := auth.Identity{Account: "acme", KeyID: "k_second"} // another key of the same account
	send := func(id auth.Identity, body string) error {
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, id)
		if err != nil {
			return err
		}
		defer route.Done()
		if got, _ := io.ReadAll(r.Body); string(got) != body {
			t.Fatalf("sent upstream %s, want %s", got, body)
		}
		return nil
	}
	const m = `{"model":"doubao","store":true,"input":[`
	for _, tc := range []struct {
		name, body, param string
	}{
		{"own reasoning by id alone", m + `{"type":"reasoning","id":"rs_mine","summary":[]}]}`, ""},
		{"own items replayed", m + `{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_mine","summary":[],"encrypted_content":"gAAA"},{"type":"message","id":"msg_mine","role":"assistant","content":[{"type":"output_text","text":"x"}]},{"type":"function_call","id":"fc_mine","call_id":"call_1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"{}"}]}`, ""},
		{"own item reference", m + `{"type":"item_reference","id":"msg_mine"}]}`, ""},
		{"own approval request", m + `{"type":"mcp_approval_response","approval_request_id":"mcpr_mine","approve":true}]}`, ""},
		{"null id", m + `{"type":"message","id":null,"role":"user","content":"x"}]}`, ""},
		{"their reasoning by id alone", m + `{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_theirs","summary":[]}]}`, "input[1].id"},
		{"their message with content", m + `{"type":"message","id":"msg_theirs","role":"assistant","content":[{"type":"output_text","text":"x"}]}]}`, "input[0].id"},
		{"unknown tool call", m + `{"type":"function_call","id":"fc_unknown","call_id":"c","name":"f","arguments":"{}"}]}`, "input[0].id"},
		{"their item among own", m + `{"type":"reasoning","id":"rs_mine"},{"type":"message","id":"msg_mine"},{"type":"reasoning","id":"rs_theirs"},{"type":"message","id":"msg_mine"}]}`, "input[2].id"},
		{"their approval request", m + `{"type":"mcp_approval_response","approval_request_id":"mcpr_theirs","approve":true}]}`, "input[0].approval_request_id"},
		{"approval request in capitals", m + `{"type":"mcp_approval_response","Approval_Request_ID":"mcpr_theirs","approve":true}]}`, "input[0].Approval_Request_ID"},
		{"id in capitals", m + `{"type":"reasoning","ID":"rs_theirs"}]}`, "input[0].ID"},
		{"id in another case besides an own one", m + `{"type":"reasoning","id":"rs_mine","Id":"rs_theirs"}]}`, "input[0].Id"},
		{"id repeated", m + `{"type":"reasoning","id":"rs_mine","id":"rs_theirs"}]}`, "input[0].id"},
		{"escaped id key", m + `{"type":"reasoning","\u0069d":"rs_theirs"}]}`, "input[0].id"},
		{"input in capitals", `{"model":"doubao","INPUT":[{"type":"reasoning","id":"rs_theirs"}]}`, "INPUT[0].id"},
		{"type repeated in another case", m + `{"type":"reasoning","TYPE":"message","id":"rs_mine"}]}`, "input[0].type"},
		{"empty id", m + `{"type":"reasoning","id":""}]}`, "input[0].id"},
		{"id as an array", m + `{"type":"reasoning","id":["rs_theirs"]}]}`, "input[0].id"},
		{"id as a number", m + `{"type":"reasoning","Id":7}]}`, "input[0].Id"},
		{"a response id as an item", m + `{"type":"item_reference","id":"resp_mine"}]}`, "input[0].id"},
		{"input as one item object", `{"model":"doubao","input":{"type":"item_reference","id":"rs_theirs"}}`, "input.id"},
		{"input object in capitals", `{"model":"doubao","Input":{"type":"reasoning","ID":"rs_theirs"}}`, "Input.ID"},
		{"items in a nested array", `{"model":"doubao","input":[[{"type":"item_reference","id":"rs_theirs"}]]}`, "input[0][0].id"},
		{"own item in a nested array", `{"model":"doubao","input":[[{"type":"item_reference","id":"rs_mine"}]]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, id := range []auth.Identity{acme, otherKey} {
				err := send(id, tc.body)
				if tc.param == "" {
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				if e := wantError(t, err, 400, "invalid_request_body"); e.Param != tc.param {
					t.Fatalf("param %q, want %q (%s)", e.Param, tc.param, e.Message)
				}
			}
		})
	}
	// No existence oracle: another account's id and an unknown one get the same answer.
	foreign := send(acme, m+`{"type":"reasoning","id":"rs_theirs"}]}`)
	unknown := send(acme, m+`{"type":"reasoning","id":"rs_nobody"}]}`)
	if foreign == nil || foreign.Error() != unknown.Error() {
		t.Fatalf("answers differ: %v and %v", foreign, unknown)
	}
	// The other account is refused its neighbour's items the same way.
	if err := send(auth.Identity{Account: "other", KeyID: "k3"}, m+`{"type":"reasoning","id":"rs_mine"}]}`); err == nil {
		t.Fatal("another account used acme's reasoning item")
	}
	// A long replayed conversation passes: its ids are read storage.MaxItemClaim at a time, and
	// an id named again does not count again.
	ids := make([]string, 2*storage.MaxItemClaim+5)
	var items []string
	for i := range ids {
		ids[i] = fmt.Sprintf("msg_%04d", i)
		items = append(items, `{"type":"message","id":"`+ids[i]+`","role":"assistant","content":[]}`)
	}
	for batch := range slices.Chunk(ids, storage.MaxItemClaim) {
		if _, err := store.ClaimItems(context.Background(), "acme", batch, exp); err != nil {
			t.Fatal(err)
		}
	}
	replayed := strings.Join(items, ",") + "," + strings.Join(items, ",")
	if err := send(acme, m+replayed+`]}`); err != nil {
		t.Fatalf("%d own items, each twice: %v", len(items), err)
	}
	// Another account's id after them is still refused, at its place.
	if e := wantError(t, send(acme, m+replayed+`,{"type":"reasoning","id":"rs_theirs"}]}`), 400, "invalid_request_body"); e.Param != fmt.Sprintf("input[%d].id", 2*len(items)) {
		t.Fatalf("param %q (%s)", e.Param, e.Message)
	}
	// Past MaxBodyItems distinct ids: 400.
	items = items[:0]
	for i := range MaxBodyItems + 1 {
		items = append(items, fmt.Sprintf(`{"type":"item_reference","id":"x%d"}`, i))
	}
	if e := wantError(t, send(acme, m+strings.Join(items, ",")+`]}`), 400, "invalid_request_body"); !strings.Contains(e.Message, "more than") {
		t.Fatal(e)
	}
}

// An item records the model of the call that revealed it: a key restricted to other models is
// refused it as an unknown id, a key that may use the model is not; a record of the account
// alone (written before models were kept) is the account's, as Identity.Sees reads it.
func TestInputItemsOfAnotherModelAreRefused(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store}
	ctx := context.Background()
	every := auth.Identity{Account: "acme", KeyID: "k_every"}
	doubaoOnly := auth.Identity{Account: "acme", KeyID: "k_doubao", Models: []string{"doubao"}}
	if err := rt.claimItems(ctx, every, "gemini-pro", []string{"rs_gemini"}); err != nil {
		t.Fatal(err)
	}
	if err := rt.claimItems(ctx, every, "doubao", []string{"rs_doubao"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ClaimItems(ctx, "acme", []string{"rs_bare"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if owners, err := store.ItemOwners(ctx, []string{"rs_gemini"}); err != nil || owners[0] != "acme\ngemini-pro" {
		t.Fatalf("record %q, %v", owners, err)
	}
	send := func(id auth.Identity, item string) error {
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(`{"model":"doubao","input":[{"type":"item_reference","id":"`+item+`"}]}`))
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, id)
		if err == nil {
			route.Done()
		}
		return err
	}
	unknown := send(doubaoOnly, "rs_nobody")
	if err := send(doubaoOnly, "rs_gemini"); err == nil || err.Error() != unknown.Error() {
		t.Fatalf("the doubao key naming gemini's item: %v, want %v", err, unknown)
	}
	for _, tc := range []struct {
		id   auth.Identity
		item string
	}{{doubaoOnly, "rs_doubao"}, {doubaoOnly, "rs_bare"}, {every, "rs_gemini"}, {every, "rs_doubao"}} {
		if err := send(tc.id, tc.item); err != nil {
			t.Errorf("%s naming %s: %v", tc.id.KeyID, tc.item, err)
		}
	}
}

// The store is read once for all the items of a body, and not at all for a body without ids.
func TestInputItemsAreCheckedInOneRead(t *testing.T) {
	store := &countingOwners{Owners: ownersStore(t)}
	rt := &Router{Catalog: catalog(t), Owners: store}
	if _, err := store.ClaimItems(context.Background(), "acme", []string{"rs_1", "msg_1"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for body, reads := range map[string]int{
		`{"model":"doubao","input":[{"type":"reasoning","id":"rs_1"},{"type":"message","id":"msg_1"},{"type":"item_reference","id":"rs_1"}]}`: 1,
		`{"model":"doubao","input":[{"role":"user","content":"hi"}],"tools":[{"type":"function","name":"f"}]}`:                                0,
	} {
		store.reads = 0
		r := httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if _, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "acme"}); err != nil {
			t.Fatal(err)
		}
		if store.reads != reads {
			t.Fatalf("%d reads of item owners for %s, want %d", store.reads, body, reads)
		}
	}
}

type countingOwners struct {
	Owners
	reads int
}

func (c *countingOwners) ItemOwners(ctx context.Context, ids []string) ([]string, error) {
	c.reads++
	return c.Owners.ItemOwners(ctx, ids)
}

func TestAnswerItems(t *testing.T) {
	for body, want := range map[string][]string{
		`{"output":[{"id":"a"},{"type":"x"},{"id":"b","content":[{"id":"nested"}]}]}`: {"a", "b"},
		`{"object":"list","data":[{"id":"c"}]}`:                                       {"c"},
		`not json`:                                                                    nil,
		`{"output":"x"}`:                                                              nil,
	} {
		if got := answerItems([]byte(body)); !slices.Equal(got, want) {
			t.Errorf("answerItems(%s) = %q, want %q", body, got, want)
		}
	}
}

// FuzzItemsWriter checks that whatever a Responses upstream streams or answers, in whatever
// pieces, the client gets exactly those bytes and the writer never panics.
func FuzzItemsWriter(f *testing.F) {
	f.Add([]byte("data: {\"item\":{\"id\":\"rs_1\"}}\n\ndata: {\"response\":{\"id\":\"r\",\"output\":[{\"id\":\"m\"}]}}\n\n"), uint8(3), true)
	f.Add([]byte(`{"id":"r","output":[{"id":"rs_1"}]}`), uint8(1), false)
	f.Add([]byte("data: {\"item\":{\"id\":1}}\r\n\r\ndata: x"), uint8(7), true)
	f.Add([]byte("data: {\"item\":{\"id\":\"a\"}}\n\ndata: {\"item\":{\"id\":\"b\",\"result\":\"0123456789012345678901234567890123456789\"}}\n\ndata: {\"item\":{\"id\":\"c\"}}\n\n"), uint8(5), true)
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8, stream bool) {
		size := int(chunk%16) + 1
		w := httptest.NewRecorder()
		claims := 0
		cw := &CreatedWriter{ResponseWriter: w, claim: func([]string) error { claims++; return nil }, logger: zap.NewNop(), limit: 1 << 10, eventLimit: 48}
		if stream {
			cw.Header().Set("Content-Type", "text/event-stream")
		} else {
			cw.Header().Set("Content-Type", "application/json")
		}
		cw.WriteHeader(http.StatusOK)
		for i := 0; i < len(body); i += size {
			if _, err := cw.Write(body[i:min(i+size, len(body))]); err != nil {
				t.Fatal(err)
			}
		}
		cw.Finish()
		if !bytes.Equal(w.Body.Bytes(), body) {
			t.Fatalf("sent %q, the client got %q", body, w.Body.Bytes())
		}
		if !stream && claims > 1 {
			t.Fatalf("%d store writes for one JSON answer", claims)
		}
	})
}

// Interface guards
var _ Owners = (*storage.Badger)(nil)

// A JSON answer larger than the held bound passes through with its items unrecorded: they are
// then nobody's, so unusable by id (closed, not open).
func TestItemsOfAnAnswerPastTheBoundAreNotRecorded(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store, Logger: zap.NewNop(), MaxCreateAnswer: 64}
	p, _ := rt.Catalog.ProviderFor("doubao")
	w := httptest.NewRecorder()
	cw := rt.Created(w, httptest.NewRequest("GET", "/v1/responses/resp_1", nil), auth.Identity{Account: "acme"}, Route{Model: "doubao", Provider: p, RevealsItems: true})
	answer := `{"id":"resp_1","output":[{"id":"rs_large","summary":[],"encrypted_content":"` + strings.Repeat("A", 100) + `"}]}`
	proxyTo(cw, "application/json", answer[:50], answer[50:])
	cw.Finish()
	if w.Body.String() != answer || itemOwner(t, store, "rs_large") != "" {
		t.Fatalf("answer %q; rs_large owned by %q", w.Body, itemOwner(t, store, "rs_large"))
	}
}
