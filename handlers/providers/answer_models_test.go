package providers

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Show puts the client's ids where an answer names the upstream's: the top-level model, the
// model of a Responses event's response, and the tools' models it maps, every other byte kept.
func TestAnswerModelsShow(t *testing.T) {
	m := AnswerModels{Model: "alias", Tools: map[string]string{"img-up": "img"}}
	for _, c := range []struct{ in, want string }{
		{`{"model":"up","x":1}`, `{"model":"alias","x":1}`},
		{`{ "id" : 1 , "model" :  "up" }`, `{ "id" : 1 , "model" :  "alias" }`},
		{`{"type":"response.created","response":{"id":"r","model":"up","tools":[{"type":"image_generation","model":"img-up"},{"type":"function","name":"f"}]}}`,
			`{"type":"response.created","response":{"id":"r","model":"alias","tools":[{"type":"image_generation","model":"img"},{"type":"function","name":"f"}]}}`},
		{`{"model":"up","tools":[ {"model":"img-up"} , {"model":"other"} ]}`, `{"model":"alias","tools":[ {"model":"img"} , {"model":"other"} ]}`},
		{`{"tools":{"model":"img-up"}}`, `{"tools":{"model":"img"}}`},
		{`{"model":"up","output":[{"model":"img-up","response":{"model":"up"}}]}`, `{"model":"alias","output":[{"model":"img-up","response":{"model":"up"}}]}`},
		{`{"model":7,"tools":[1,"x",null]}`, `{"model":7,"tools":[1,"x",null]}`},
		{`{"model":"\u0075p"}`, `{"model":"alias"}`},
	} {
		got, _ := m.Show([]byte(c.in))
		if string(got) != c.want {
			t.Errorf("Show(%s) =\n %s, want\n %s", c.in, got, c.want)
		}
	}
	// Without a mapped request model, only the tools' models are shown.
	if got, ok := (AnswerModels{Tools: m.Tools}).Show([]byte(`{"model":"up","tools":[{"model":"img-up"}]}`)); !ok || string(got) != `{"model":"up","tools":[{"model":"img"}]}` {
		t.Errorf("tools only: %s, %v", got, ok)
	}
	for _, bad := range []string{``, `[]`, `{"model":"up"`, `{"model":"up"} {}`, `{"model":"up",}`, `"up"`} {
		if got, ok := m.Show([]byte(bad)); ok || string(got) != bad {
			t.Errorf("Show(%q) = %q, %v; want it unchanged", bad, got, ok)
		}
	}
}

// Show changes only the values it names: the answer decodes to what it was, those values aside.
func FuzzAnswerModelsShow(f *testing.F) {
	f.Add([]byte(`{"model":"a","tools":[{"model":"t"}],"response":{"model":"a","tools":{"model":"t"}}}`))
	m := AnswerModels{Model: "m", Tools: map[string]string{"t": "c"}}
	f.Fuzz(func(t *testing.T, body []byte) {
		out, ok := m.Show(body)
		if !ok {
			return
		}
		var before, after map[string]any
		if json.Unmarshal(body, &before) != nil || json.Unmarshal(out, &after) != nil {
			t.Fatalf("Show(%q) = %q: not both objects", body, out)
		}
		if after["model"] != nil {
			if _, isString := before["model"].(string); isString && after["model"] != "m" {
				t.Fatalf("Show(%q) = %q: model not shown", body, out)
			}
			before["model"], after["model"] = nil, nil
		}
		delete(before, "tools")
		delete(after, "tools")
		delete(before, "response")
		delete(after, "response")
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("Show(%q) = %q: other members changed", body, out)
		}
	})
}
