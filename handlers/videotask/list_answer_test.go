package videotask

import (
	"encoding/json"
	"reflect"
	"testing"
)

// listItems reads a list answer exactly as json.Unmarshal into []map[string]json.RawMessage
// does: the same items, names and value bytes, and the same refusals.
func FuzzListItems(f *testing.F) {
	for _, seed := range []string{
		`{"items":[{"id":"cgt-1","model":"m","status":"queued","error":null,"created_at":1,"updated_at":2,"service_tier":"default","execution_expires_after":172800}],"total":1}`,
		`{"items":[{"id":"a","content":{"video_url":"https://x/a.mp4?x=\"}\\"},"usage":{"total_tokens":5}} , { "id" : "b" , "seed" : -1.5e3 , "tags":[1,[2,{"x":"]"}]] } ]}`,
		`{"ITEMS":[{"id":"a"}]}`,
		`{"items":[{"id":"a","id":"b"}],"items":[{"\u0069d":"c","st\u00e1tus":"\u00e9"}]}`,
		`{"items":[null,{}]}`,
		`{"items":[1]}`,
		`{"items":["x"]}`,
		`{"items":null}`,
		`{"items":[{"id":"a"}`,
		`{"items":[{"\xff":"x","é":"y"}]}`,
		`[]`,
		`{}`,
		` { "items" : [ { } ] } `,
		`{"it\u0065ms":[{"id":"a"}]}`,
		`{"itemſ":[{"id":"a"}],"x":1}`,
		`{"ıtems":[{"id":"a"}]}`,
		`{"items":5,"items":[{"id":"a"}]}`,
		`{"items":[{"id":"a"}],"items":null}`,
		`{"items":{"id":"a"}}`,
		`null`,
		`"items"`,
		`{"total":2,"Items":[{},null, {"a":[]}]}`,
		`{"items":[{"":""}],"items":[{}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var want struct {
			Items []map[string]json.RawMessage `json:"items"`
		}
		werr := json.Unmarshal(body, &want)
		if werr == nil {
			// A repeated "items" member: encoding/json decodes the later array into the maps
			// the earlier one left, merging their members; listItems keeps the last array
			// alone, as a repeated member's last value wins everywhere else.
			var last struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(body, &last); err != nil {
				t.Fatalf("json.Unmarshal(%q) into raw items: %v", body, err)
			}
			want.Items = make([]map[string]json.RawMessage, len(last.Items))
			for i, raw := range last.Items {
				if err := json.Unmarshal(raw, &want.Items[i]); err != nil {
					t.Fatalf("json.Unmarshal(%q) item %d: %v", body, i, err)
				}
			}
		}
		got, ok := listItems(body)
		if ok != (werr == nil) {
			t.Fatalf("listItems(%q) ok = %v, json.Unmarshal: %v", body, ok, werr)
		}
		if !ok {
			return
		}
		if len(got) != len(want.Items) {
			t.Fatalf("listItems(%q) = %d items, want %d", body, len(got), len(want.Items))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want.Items[i]) {
				t.Fatalf("listItems(%q) item %d = %q, want %q", body, i, got[i], want.Items[i])
			}
		}
	})
}

// idString reads an id as json.Unmarshal into a string does; idBytes reads the same.
func TestIDString(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want string
		ok   bool
	}{
		{`"cgt-1"`, "cgt-1", true},
		{`"a\"b"`, `a"b`, true},
		{`"\u0041"`, "A", true},
		{`null`, "", true},
		{`1`, "", false},
		{``, "", false},
		{`{}`, "", false},
	} {
		var raw json.RawMessage
		if c.raw != "" {
			raw = json.RawMessage(c.raw)
		}
		if got, ok := idString(raw); got != c.want || ok != c.ok {
			t.Errorf("idString(%s) = %q, %v; want %q, %v", c.raw, got, ok, c.want, c.ok)
		}
		if got, ok := idBytes(raw); string(got) != c.want || ok != c.ok {
			t.Errorf("idBytes(%s) = %q, %v; want %q, %v", c.raw, got, ok, c.want, c.ok)
		}
	}
}
