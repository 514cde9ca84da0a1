package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestCreateTellsWrittenFromNeverSent: a create whose request was written to the upstream and
// then timed out is Sent (the provider may have made and billed it); one refused at the
// connection, never written, is not.
func TestCreateTellsWrittenFromNeverSent(t *testing.T) {
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer hung.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := "http://" + closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name, url string
		sent      bool
		want      error
	}{
		{"written, then timed out", hung.URL, true, ErrTimeout},
		{"refused at the connection", refusing, false, ErrRefused},
	} {
		base, _ := url.Parse(tc.url + "/v1")
		cat, err := providers.NewCatalog([]*providers.Provider{{Name: "p", BaseURL: base, APIKey: "k", Models: []string{"m"}}})
		if err != nil {
			t.Fatal(err)
		}
		cat.WithHealth(providers.NewBoard())
		p, _ := cat.Provider("p")
		c := Client{HTTP: NewHTTPClient(ClientOptions{Timeout: 200 * time.Millisecond}), Logger: zap.NewNop()}
		_, _, err = c.Create(context.Background(), "acct", p, "images/edits", []byte(`{}`))
		if !errors.Is(err, tc.want) || Sent(err) != tc.sent {
			t.Errorf("%s: Create = %v (Sent %v); want %v, Sent %v", tc.name, err, Sent(err), tc.want, tc.sent)
		}
	}
}
