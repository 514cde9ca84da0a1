package passthrough

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// keptOf is what a keptAnswer keeps of answer, written in pieces of one byte and whole.
func keptOf(t *testing.T, answer string) string {
	t.Helper()
	var whole, bytewise keptAnswer
	whole.WriteString(answer)
	b, _ := io.ReadAll(iotest.OneByteReader(strings.NewReader(answer)))
	for _, c := range b {
		bytewise.Write([]byte{c})
	}
	if string(whole.Bytes()) != string(bytewise.Bytes()) {
		t.Errorf("written whole %q, byte by byte %q", whole.Bytes(), bytewise.Bytes())
	}
	return string(whole.Bytes())
}

// A retrieve's answer is kept with each string past maxKeptString bytes emptied, every other byte
// as it came (escapes and quotes inside strings read as such), up to maxStatusAnswer.
func TestKeptAnswer(t *testing.T) {
	long := strings.Repeat("iVBO", 300<<10)
	for _, c := range []struct{ name, in, want string }{
		{"short", `{"id":"t","status":"succeeded","data":[{"url":"https://x/a.png"}]}`, `{"id":"t","status":"succeeded","data":[{"url":"https://x/a.png"}]}`},
		{"images carried", `{"status":"succeeded","data":[{"b64_json":"` + long + `"},{"b64_json":"` + long + `"}],"size":"1024x1024"}`,
			`{"status":"succeeded","data":[{"b64_json":""},{"b64_json":""}],"size":"1024x1024"}`},
		{"escapes", `{"a":"x\"y\\","status":"failed","b":"` + strings.Repeat(`\"`, maxKeptString) + `"}`,
			`{"a":"x\"y\\","status":"failed","b":""}`},
		{"a string of maxKeptString bytes", `{"s":"` + strings.Repeat("a", maxKeptString) + `"}`, `{"s":"` + strings.Repeat("a", maxKeptString) + `"}`},
		{"one byte more", `{"s":"` + strings.Repeat("a", maxKeptString+1) + `"}`, `{"s":""}`},
	} {
		if got := keptOf(t, c.in); got != c.want {
			t.Errorf("%s: kept %.200q, want %.200q", c.name, got, c.want)
		}
	}
	items := `{"status":"succeeded","data":[` + strings.Repeat(`{"url":"https://x/a.png"},`, 10<<10) + `{}]}`
	if got := keptOf(t, items); len(got) != maxStatusAnswer || !strings.HasPrefix(items, got) {
		t.Errorf("an answer past the bound: kept %d bytes", len(got))
	}
}
