package providers

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// An upstream's Credentials are what it sends: its API key, or its Kling secret key and the
// tokens it signed, the one a renewal replaced included; Echoes finds each in an answer, and
// nothing in an answer without one.
func TestCredentialsAreWhatIsSent(t *testing.T) {
	base, _ := url.Parse("https://api.example/v1")
	keyed := &Provider{Name: "a", Models: []string{"m"}, Upstreams: []*Upstream{{Name: "a", BaseURL: base, APIKey: "plain-key-123"}}}
	kling := &Provider{Name: "k", AuthStyle: AuthKlingJWT, Models: []string{"n"},
		Upstreams: []*Upstream{{Name: "k", BaseURL: base, AccessKey: "ak-1", SecretKey: "kling-secret"}}}
	c, err := NewCatalog([]*Provider{keyed, kling})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_800_000_000, 0)
	c.Health().Now = func() time.Time { return clock }
	if got := keyed.Upstreams[0].Credentials(); !slices.Equal(got, []string{"plain-key-123"}) {
		t.Fatalf("the keyed upstream's credentials are %q", got)
	}
	if !keyed.Upstreams[0].Echoes([]byte(`{"message":"bad key plain-key-123"}`)) || keyed.Upstreams[0].Echoes([]byte(`{"message":"bad key"}`)) {
		t.Fatal("Echoes does not find exactly the API key")
	}
	sent := func() string {
		h := http.Header{}
		kling.Upstreams[0].SetCredentials(h)
		return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
	}
	first := sent()
	clock = clock.Add(26 * time.Minute) // less than 5 minutes left: the next call renews
	second := sent()
	u := kling.Upstreams[0]
	if first == second || !slices.Equal(u.Credentials(), []string{"kling-secret", second, first}) {
		t.Fatalf("the Kling upstream's credentials are %q; want the secret key, %q and %q", u.Credentials(), second, first)
	}
	for _, tok := range []string{first, second, "kling-secret"} {
		if !u.Echoes([]byte(`{"task_status_msg":"token ` + tok + ` expired"}`)) {
			t.Fatalf("Echoes misses %q", tok)
		}
	}
	if u.Echoes([]byte(`{"task_status_msg":"ak-1 expired"}`)) {
		t.Fatal("the access key, which is no secret (the token's iss), counts as one")
	}
}

// Echoes reads a JSON answer's strings as a client's decoder does: the key spelled with JSON
// escapes, in a value or a member name, is found; escapes that spell something else are not it.
func TestEchoesDecodedStrings(t *testing.T) {
	u := &Upstream{Name: "a", APIKey: "plain-key-123"}
	for _, body := range []string{`{"message":"bad key \u0070lain-key-123"}`, `{"m":"plain-key\u002d123"}`,
		`{"debug":{"pl\u0061in-key-123":true}}`, `["x\"", "plain-key-12\u0033"]`,
		`{"url":"https://cdn/v?k=%70lain-key%2D123&x=%zz"}`, `{"url":"https://cdn/v?k=\u002570lain-key-123"}`} {
		if !u.Echoes([]byte(body)) {
			t.Errorf("Echoes misses the key in %s", body)
		}
	}
	for _, body := range []string{`{"message":"bad key \u0070lain-key-124"}`, `{"m":"plain-key-\n123"}`, `{"m":"plain-key-\\u0031\u0032\u0033"}`,
		`{"url":"https://cdn/v?k=%2570lain-key-123"}`} {
		if u.Echoes([]byte(body)) {
			t.Errorf("Echoes finds the key in %s", body)
		}
	}
}
