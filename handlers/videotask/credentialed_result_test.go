package videotask

import "testing"

// carriesCredential finds a secret in a URL as written or percent-encoded, and nothing else.
func TestCarriesCredential(t *testing.T) {
	secrets := []string{"key-123", "eyJ.a.b"}
	for _, u := range []string{"https://cdn.example/v.mp4?api_key=key-123", "https://cdn.example/v.mp4?k=%6Bey-123",
		"https://cdn.example/key%2D123/v.mp4", "https://cdn.example/v.mp4?t=eyJ.a.b&x=1", "https://cdn.example/v.mp4?k=%6Bey-123&x=%zz%"} {
		if !carriesCredential(u, secrets) {
			t.Errorf("carriesCredential misses the secret in %s", u)
		}
	}
	for _, u := range []string{"https://cdn.example/v.mp4?api_key=key-124", "https://cdn.example/v.mp4?k=%zz", "https://cdn.example/v.mp4"} {
		if carriesCredential(u, secrets) {
			t.Errorf("carriesCredential finds a secret in %s", u)
		}
	}
}
