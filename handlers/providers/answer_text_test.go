package providers

import "testing"

// An error answer's text shows the client's ids where it names the upstream's as a word.
func TestShowIDsInText(t *testing.T) {
	ids := map[string]string{"up-chat": "chat-alias", "img-up": "studio-image", "q\"x": "y"}
	for _, c := range []struct {
		in, want string
		changed  bool
	}{
		{"{\"error\":{\"message\":\"The model `up-chat` does not exist.\",\"param\":\"model\"}}",
			"{\"error\":{\"message\":\"The model `chat-alias` does not exist.\",\"param\":\"model\"}}", true},
		{`model up-chat.`, `model chat-alias.`, true},
		{`models/up-chat:generateContent; img-up, up-chat`, `models/chat-alias:generateContent; studio-image, chat-alias`, true},
		{`up-chat-2 x.up-chat up-chat.5 up-chat_b aup-chat`, `up-chat-2 x.up-chat up-chat.5 up-chat_b aup-chat`, false},
		{`"q\"x"`, `"q\"x"`, false},
		{``, ``, false},
	} {
		got, changed := ShowIDsInText([]byte(c.in), ids)
		if string(got) != c.want || changed != c.changed {
			t.Errorf("ShowIDsInText(%q) = %q, %v; want %q, %v", c.in, got, changed, c.want, c.changed)
		}
	}
	// Each id is shown once, as the answer named it: an id written in is not read again, whether
	// the ids swap or one client id is another's upstream id.
	for _, c := range []struct {
		ids     map[string]string
		in, out string
	}{
		{map[string]string{"m-a": "m-b", "m-b": "m-a"}, "m-b and m-a", "m-a and m-b"},
		{map[string]string{"gpt-4-turbo-2024": "gpt-4-turbo", "gpt-4-turbo": "gpt-4"},
			"The model `gpt-4-turbo-2024` (not gpt-4-turbo) does not exist",
			"The model `gpt-4-turbo` (not gpt-4) does not exist"},
	} {
		if got, _ := ShowIDsInText([]byte(c.in), c.ids); string(got) != c.out {
			t.Errorf("ShowIDsInText(%q, %v) = %q; want %q", c.in, c.ids, got, c.out)
		}
	}
}
