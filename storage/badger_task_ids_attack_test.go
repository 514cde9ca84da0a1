package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// oddTaskIDs are task ids an upstream may name (pass-through records the upstream's object ids):
// empty, with NUL, invalid UTF-8, quotes and backslashes, a key prefix of another record, long.
var oddTaskIDs = []string{"", "\x00", "a\x00b", "\xff\xfe", `q"uote`, `back\slash`, "t/x", "ta/x", "tu/x",
	"с-юникод", " cgt-1 ", strings.Repeat("x", 4000)}

// answerNaming is an upstream answer that names the task id quoted twice, inside another string
// and (for a plain id) escaped, spaced as an upstream writes it.
func answerNaming(id string) json.RawMessage {
	quoted, err := json.Marshal(id)
	if err != nil {
		panic(err)
	}
	inner, escaped := string(quoted[1:len(quoted)-1]), ""
	if id != "" && id[0] >= 'a' && id[0] <= 'z' {
		escaped = fmt.Sprintf(`\u%04x%s`, id[0], inner[1:])
	}
	return json.RawMessage(fmt.Sprintf(`{ "id": %s, "note": "about %s", "again": %s, "escaped": "%s", "big": "%s" }`,
		quoted, inner, quoted, escaped, strings.Repeat("y", 9000)))
}

// Tasks of odd ids, created with an answer that names them (over the size of a batched record:
// the create's own transaction), survive a reopen: every create of them again, by another
// account, is refused, while the filter is built and once it answers, and the answer reads back
// as stored (compacted), byte for byte.
func TestBadgerOddTaskIDsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b := openBook(t, dir)
	waitTaskIDs(t, b)
	for _, id := range oddTaskIDs {
		task := Task{ID: id, Kind: KindVideo, Account: "acme", Status: "queued", CreatedAt: bookNow.Unix(),
			ExpiresAt: bookNow.Add(time.Hour).Unix(), Result: answerNaming(id)}
		if _, err := b.CreateTask(ctx, task); err != nil {
			t.Fatalf("creating %q: %v", id, err)
		}
		mustRefuseCreate(t, b, id)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openBook(t, dir)
	defer b.Close()
	for _, id := range oddTaskIDs[:3] {
		mustRefuseCreate(t, b, id) // most likely before the scan ends
	}
	waitTaskIDs(t, b)
	for _, id := range oddTaskIDs {
		mustRefuseCreate(t, b, id)
		got, err := b.Task(ctx, id)
		want, merr := json.Marshal(answerNaming(id))
		if err != nil || merr != nil || got.ID != id || got.Account != "acme" || !bytes.Equal(got.Result, want) {
			t.Fatalf("task %q = %q %q, %v, %v; want acme's with the answer %q", id, got.ID, got.Result, err, merr, want)
		}
	}
}
