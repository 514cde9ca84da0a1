package jsonkeys

import (
	"errors"
	"strings"
	"testing"
)

func TestOthers(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","x":{"a":1},"mod\u0065l":2,"y":[1,"}"] , "z" : null}`: `x={"a":1} y=[1,"}"] z=null`,
		`{"model":"m"}`: ``,
		`{}`:            ``,
		`[{"x":1}]`:     ``,
		`"x"`:           ``,
		`{"x":`:         ``,
	} {
		var got []string
		for _, m := range Others([]byte(body), "model") {
			got = append(got, m.Key+"="+string(m.Value))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("Others(%s) = %q, want %q", body, strings.Join(got, " "), want)
		}
	}
}

// Strings and StringsValid (for valid JSON) visit the same strings, stop at the same errors.
func TestStringsVisitsEveryStringValue(t *testing.T) {
	body := `{"a":["x",{"b":"y","k":1}],"c":{"d":[["z"]]},"e":true,"f":"\u0077"}`
	deep := strings.Repeat(`{"a":`, MaxWalkDepth+1) + `"x"` + strings.Repeat(`}`, MaxWalkDepth+1)
	for name, walk := range map[string]func([]byte, *Path, func(*Path, []byte) error) error{"Strings": Strings, "StringsValid": StringsValid} {
		var got []string
		err := walk([]byte(body), &Path{Key: "root", Index: -1}, func(path *Path, raw []byte) error {
			got = append(got, path.String()+"="+string(raw))
			return nil
		})
		if err != nil {
			t.Fatal(name, err)
		}
		want := `root.a[0]="x" root.a[1].b="y" root.c.d[0][0]="z" root.f="\u0077"`
		if strings.Join(got, " ") != want {
			t.Fatalf("%s visited %q, want %q", name, strings.Join(got, " "), want)
		}
		stop := errors.New("stop")
		if err := walk([]byte(body), nil, func(*Path, []byte) error { return stop }); err != stop {
			t.Fatalf("%s: visit's error: got %v", name, err)
		}
		if err := walk([]byte(deep), nil, func(*Path, []byte) error { return nil }); err != ErrTooDeep {
			t.Fatalf("%s: too deep: got %v", name, err)
		}
	}
	if err := Strings([]byte(`{"a":`), nil, func(*Path, []byte) error { return nil }); err != ErrNotObject {
		t.Fatalf("broken JSON: got %v", err)
	}
}

func TestElementsValid(t *testing.T) {
	for body, want := range map[string]string{
		` [ 1 , "a]" ,{"b":[2]}, null ,[]] `: `1|"a]"|{"b":[2]}|null|[]`,
		`[]`:                                 ``,
	} {
		got, ok := ElementsValid([]byte(body))
		var parts []string
		for _, e := range got {
			parts = append(parts, string(e))
		}
		if !ok || got == nil || strings.Join(parts, "|") != want {
			t.Errorf("ElementsValid(%s) = %q %v, want %q", body, parts, ok, want)
		}
	}
	for _, body := range []string{`{"a":[1]}`, `"[1]"`, `1`, `null`} {
		if _, ok := ElementsValid([]byte(body)); ok {
			t.Errorf("ElementsValid(%s) is an array", body)
		}
	}
}

// TestStringsPathsPastTheFirstSlots: the paths of one walk live in slots per depth; a walk
// deeper than the first slots goes on with the right path for the containers it came from and
// for the siblings after them.
func TestStringsPathsPastTheFirstSlots(t *testing.T) {
	body := `{"a":[{"b":[[[[[[[[["deep"]]]]]]]]],"c":"after"},{"d":"next"}],"e":{"f":"x"},"g":[{"h":"y"},{"i":"z"}]}`
	var got []string
	err := Strings([]byte(body), nil, func(path *Path, raw []byte) error {
		got = append(got, path.String()+"="+string(raw))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `a[0].b[0][0][0][0][0][0][0][0][0]="deep" a[0].c="after" a[1].d="next" e.f="x" g[0].h="y" g[1].i="z"`
	if strings.Join(got, " ") != want {
		t.Fatalf("visited %q, want %q", strings.Join(got, " "), want)
	}
}

// TestPathKeyIsTheDecodedKey: the keys pathKey answers without a copy are the keys decodeKey
// makes of the same bytes, escaped spellings included.
func TestPathKeyIsTheDecodedKey(t *testing.T) {
	for _, raw := range []string{`"role"`, `"content"`, `"type"`, `"text"`, `"image_url"`, `"url"`, `"name"`,
		`"arguments"`, `"function"`, `"tool_calls"`, `"id"`, `"model"`, `"messages"`, `"input"`, `"prompt"`,
		`"mod\u0065l"`, `"messages\u0000"`, `"Model"`, `"other"`} {
		want, _ := decodeKey([]byte(raw))
		if got := pathKey([]byte(raw)); got != want {
			t.Errorf("pathKey(%s) = %q, decodeKey %q", raw, got, want)
		}
	}
}
