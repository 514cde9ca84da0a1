package upstream

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestRefusalHidesTheKeySent: a provider that quotes the whole key it refused, a key with none
// of the usual prefixes (as Ark's are), does not show it to the client: the refusal passed on
// (the task API, image edits) has it redacted, whatever header carried it.
func TestRefusalHidesTheKeySent(t *testing.T) {
	const key = "3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + r.Header.Get("X-Api-Key") + r.Header.Get("X-Goog-Api-Key")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":{"code":"AuthenticationError","message":"the API key `+sent+` is not valid for this model"}}`)
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL + "/api/v3")
	c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 30 * time.Second}), Logger: zap.NewNop()}
	for _, style := range []string{providers.AuthBearer, providers.AuthXAPIKey, providers.AuthGoogAPIKey} {
		p := &providers.Provider{Name: "p", BaseURL: base, APIKey: key, AuthStyle: style}
		ans, err := c.Call(context.Background(), p, http.MethodPost, "contents/generations/tasks", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		refusal := Refusal(ans)
		if strings.Contains(refusal.Message, "7b4d") || !strings.Contains(refusal.Message, Redacted) {
			t.Errorf("%s: refusal message %q shows the key", style, refusal.Message)
		}
	}
}

// TestRefusalOfTheGatewaysCredential: a provider's 401, 403 or 407 refuses the operator's
// credential and a 5xx is the provider's failure: 502 invalid_response, on the task API's path
// (Refusal) and the adaptors' alike (GatewaysFault); any other 4xx is the provider's refusal,
// passed on with its status and code.
func TestRefusalOfTheGatewaysCredential(t *testing.T) {
	body := []byte(`{"error":{"code":"Denied","message":"no access"}}`)
	for status, want := range map[int]int{401: 502, 403: 502, 407: 502, 500: 502, 503: 502, 400: 400, 404: 404, 429: 429} {
		err := Refusal(Answer{Status: status, Body: body})
		if err.Status != want || (want == 502) != (err.Code == ErrUnreadable.Code) || (want == 502) != GatewaysFault(status) {
			t.Errorf("provider %d: %d %s, want %d", status, err.Status, err.Code, want)
		}
	}
}
