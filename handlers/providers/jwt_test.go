package providers

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestKlingJWT: an upstream of AuthKlingJWT sends Authorization: Bearer <JWT>, HS256-signed with
// the secret key, iss the access key, valid from 5 s before it was made for 30 minutes. The
// token is kept while more than 5 minutes are left and renewed after; the clock is the board's.
func TestKlingJWT(t *testing.T) {
	base, _ := url.Parse("https://api.example/v1")
	p := &Provider{Name: "k", AuthStyle: AuthKlingJWT, Models: []string{"m"},
		Upstreams: []*Upstream{{Name: "a", BaseURL: base, AccessKey: "ak-1", SecretKey: "sk-1"}}}
	c, err := NewCatalog([]*Provider{p})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_800_000_000, 0)
	c.Health().Now = func() time.Time { return clock }
	token := func() (string, map[string]any) {
		h := http.Header{"Authorization": {"Bearer client-key"}, "X-Api-Key": {"other"}}
		p.Upstreams[0].SetCredentials(h)
		if h.Get("X-Api-Key") != "" {
			t.Fatal("the caller's credential stayed")
		}
		tok, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
		parts := strings.Split(tok, ".")
		if !ok || len(parts) != 3 {
			t.Fatalf("Authorization %q", h.Get("Authorization"))
		}
		mac := hmac.New(sha256.New, []byte("sk-1"))
		mac.Write([]byte(parts[0] + "." + parts[1]))
		if sig, _ := base64.RawURLEncoding.DecodeString(parts[2]); !hmac.Equal(sig, mac.Sum(nil)) {
			t.Fatal("signature is not HS256 with the secret key")
		}
		head, _ := base64.RawURLEncoding.DecodeString(parts[0])
		body, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var claims map[string]any
		if string(head) != `{"alg":"HS256","typ":"JWT"}` || json.Unmarshal(body, &claims) != nil {
			t.Fatalf("header %s claims %s", head, body)
		}
		return tok, claims
	}
	first, claims := token()
	if claims["iss"] != "ak-1" || claims["nbf"] != float64(clock.Unix()-5) || claims["exp"] != float64(clock.Add(30*time.Minute).Unix()) {
		t.Fatalf("claims %v", claims)
	}
	clock = clock.Add(24 * time.Minute)
	if again, _ := token(); again != first {
		t.Fatal("renewed with 6 minutes left")
	}
	clock = clock.Add(2 * time.Minute)
	renewed, claims := token()
	if renewed == first || claims["exp"] != float64(clock.Add(30*time.Minute).Unix()) {
		t.Fatalf("not renewed with 4 minutes left: %v", claims)
	}

	for _, bad := range []*Upstream{{Name: "a", BaseURL: base, AccessKey: "ak"}, {Name: "a", BaseURL: base, APIKey: "k"}} {
		if _, err := NewCatalog([]*Provider{{Name: "k", AuthStyle: AuthKlingJWT, Models: []string{"m"}, Upstreams: []*Upstream{bad}}}); err == nil {
			t.Fatalf("kling upstream %+v accepted", bad)
		}
	}
	if _, err := NewCatalog([]*Provider{{Name: "b", Models: []string{"m"}, Upstreams: []*Upstream{{Name: "a", BaseURL: base, AccessKey: "ak", SecretKey: "sk"}}}}); err == nil {
		t.Fatal("access_key accepted beside another auth style")
	}
}
