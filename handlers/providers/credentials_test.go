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

// CredentialsInto gives what Credentials gives: for an upstream of fixed keys the ones found
// when it was prepared (without writing buf, nor allocating), for a Kling upstream its tokens of
// the moment; an upstream not prepared, or without a key, has them found anew.
func TestCredentialsIntoIsCredentials(t *testing.T) {
	base, _ := url.Parse("https://api.example/v1")
	keyed := &Provider{Name: "a", Models: []string{"m"}, Upstreams: []*Upstream{
		{Name: "a", BaseURL: base, APIKey: "plain-key-123"}, {Name: "none", BaseURL: base}}}
	kling := &Provider{Name: "k", AuthStyle: AuthKlingJWT, Models: []string{"n"},
		Upstreams: []*Upstream{{Name: "k", BaseURL: base, AccessKey: "ak-1", SecretKey: "kling-secret"}}}
	if _, err := NewCatalog([]*Provider{keyed, kling}); err != nil {
		t.Fatal(err)
	}
	unprepared := &Upstream{Name: "u", BaseURL: base, APIKey: "unprepared-key"}
	kling.Upstreams[0].SetCredentials(http.Header{}) // signs a token
	for _, u := range []*Upstream{keyed.Upstreams[0], keyed.Upstreams[1], kling.Upstreams[0], unprepared} {
		var buf [4]string
		if got, want := u.CredentialsInto(&buf), u.Credentials(); !slices.Equal(got, want) {
			t.Errorf("%s: CredentialsInto %q, Credentials %q", u.Name, got, want)
		}
	}
	if keyed.Upstreams[1].secrets == nil {
		t.Error("the upstream without a key has its (no) keys found anew for every answer")
	}
	u := keyed.Upstreams[0]
	var buf [4]string
	if got := u.CredentialsInto(&buf); buf[0] != "" || cap(got) != 1 {
		t.Errorf("a prepared upstream's keys were written into buf (%q), or may be appended to in place (cap %d)", buf, cap(got))
	}
	if n := testing.AllocsPerRun(20, func() { secretsSink = u.CredentialsInto(&buf) }); n != 0 {
		t.Errorf("CredentialsInto allocates %v times", n)
	}
	if got := kling.Upstreams[0].CredentialsInto(&buf); len(got) != 2 || got[0] != "kling-secret" {
		t.Errorf("the Kling upstream's credentials: %q", got)
	}
}

var secretsSink []string
