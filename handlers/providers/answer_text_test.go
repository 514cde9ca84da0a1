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
}
