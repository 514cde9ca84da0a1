package providers

import (
	"encoding/json"
	"testing"
)

func TestReplaceModel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"model":"a","x":1}`, `{"model":"b-2024","x":1}`},
		{`{ "messages":[{"model":"keep"}], "model" :  "a" }`, `{ "messages":[{"model":"keep"}], "model" :  "b-2024" }`},
		{`{"m\u006fdel":"a"}`, `{"m\u006fdel":"b-2024"}`}, // the decoded key is what the router checked
		{`{"model":"a","model":"c"}`, `{"model":"b-2024","model":"b-2024"}`},
	} {
		got, ok := ReplaceModel([]byte(tc.in), "b-2024")
		if !ok || string(got) != tc.want {
			t.Errorf("ReplaceModel(%s) = %s, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, bad := range []string{`[]`, `{"model":1}`, `{"x":"a"}`, `{"model":"a"`, `not json`} {
		if got, ok := ReplaceModel([]byte(bad), "b"); ok || string(got) != bad {
			t.Errorf("ReplaceModel(%s) = %s, %v; want it unchanged and false", bad, got, ok)
		}
	}
}

func FuzzReplaceModel(f *testing.F) {
	f.Add([]byte(`{"model":"a","n":[1,2,{"model":"x"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out, ok := ReplaceModel(body, "m")
		if !ok {
			return
		}
		var v map[string]any
		if err := jsonUnmarshal(out, &v); err != nil || v["model"] != "m" {
			t.Fatalf("ReplaceModel(%q) = %q: not an object with model m (%v)", body, out, err)
		}
	})
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
