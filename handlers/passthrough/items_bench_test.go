package passthrough

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/auth"
)

// BenchmarkResponsesBodyCheck measures the reference check of a /v1/responses body
// (checkBodyRefs): a typical body without item ids, which the key hint passes without a walk, and
// a replayed conversation of 20 items with ids (10 reasoning, 10 messages), walked and checked in
// one read of a Badger store.
//
//	go test ./handlers/passthrough/ -run XXX -bench ResponsesBodyCheck -benchmem
func BenchmarkResponsesBodyCheck(b *testing.B) {
	store := ownersStore(b)
	rt := &Router{Catalog: catalog(b), Owners: store}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	ep, _, _ := rt.endpoint("POST", "/v1/responses")
	var ids, items []string
	for i := range 10 {
		rs, msg := fmt.Sprintf("rs_%024d", i), fmt.Sprintf("msg_%024d", i)
		ids = append(ids, rs, msg)
		items = append(items,
			`{"role":"user","content":"question `+fmt.Sprint(i)+`, with some text of a usual length for a turn"}`,
			`{"type":"reasoning","id":"`+rs+`","summary":[],"encrypted_content":"`+strings.Repeat("gAAAAB", 40)+`"}`,
			`{"type":"message","id":"`+msg+`","role":"assistant","status":"completed","content":[{"type":"output_text","text":"an answer of a usual length, a sentence or two","annotations":[]}]}`)
	}
	if _, err := store.ClaimItems(context.Background(), "acme", ids, time.Now().Add(time.Hour)); err != nil {
		b.Fatal(err)
	}
	for name, body := range map[string]string{
		"no ids":   `{"model":"doubao","instructions":"You are a helpful assistant.","input":[{"role":"user","content":"Write a haiku about gateways."}],"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}],"stream":true}`,
		"20 items": `{"model":"doubao","store":false,"include":["reasoning.encrypted_content"],"input":[` + strings.Join(items, ",") + `]}`,
	} {
		b.Run(name, func(b *testing.B) {
			body := []byte(body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := rt.checkBodyRefs(context.Background(), acme, ep, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStreamedAnswer measures CreatedWriter on a streamed Responses create of 200 text
// deltas and two items, written event by event: with the items recorded (every event held until
// complete and searched for ids) and, for comparison, with only the response id recorded (events
// pass untouched after the first). The store is a no-op: this is the writer's own cost.
//
//	go test ./handlers/passthrough/ -run XXX -bench StreamedAnswer -benchmem
func BenchmarkStreamedAnswer(b *testing.B) {
	events := sse(
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}`,
		`{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
		`{"type":"response.output_item.done","sequence_number":2,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"`+strings.Repeat("gAAAAB", 200)+`"}}`,
		`{"type":"response.output_item.added","sequence_number":3,"output_index":1,"item":{"type":"message","id":"msg_1","role":"assistant","status":"in_progress","content":[]}}`,
	)
	for i := range 200 {
		events = append(events, sse(`{"type":"response.output_text.delta","sequence_number":`+fmt.Sprint(4+i)+`,"item_id":"msg_1","output_index":1,"content_index":0,"delta":" word","logprobs":[]}`)...)
	}
	events = append(events, sse(`{"type":"response.completed","sequence_number":300,"response":{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","id":"rs_1","summary":[]},{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"…","annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":200}}}`)...)
	chunks := make([][]byte, len(events))
	size := 0
	for i, e := range events {
		chunks[i] = []byte(e)
		size += len(e)
	}
	for _, items := range []bool{true, false} {
		b.Run(fmt.Sprintf("items=%v", items), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				cw := &CreatedWriter{ResponseWriter: discardWriter{http.Header{}}, record: func(string, []byte) error { return nil }, logger: zap.NewNop(), limit: DefaultMaxCreateAnswer}
				if items {
					cw.claim = func([]string) error { return nil }
				}
				cw.Header().Set("Content-Type", "text/event-stream")
				cw.WriteHeader(http.StatusOK)
				for _, c := range chunks {
					if _, err := cw.Write(c); err != nil {
						b.Fatal(err)
					}
				}
				cw.Finish()
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing but its header.
type discardWriter struct{ header http.Header }

func (d discardWriter) Header() http.Header       { return d.header }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}
