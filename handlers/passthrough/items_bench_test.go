package passthrough

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
