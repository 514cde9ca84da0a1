package idempotency

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/storage"
)

// TestCutAndUnmadeAnswersAreNotReplayed: an answer marked cut is never replayed: its key is spent
// without it (409 idempotency_answer_not_kept, X-Should-Retry: false), or freed when the request
// also made nothing (MarkUnmade), so that the retry runs again. MarkMade outweighs MarkUnmade.
func TestCutAndUnmadeAnswersAreNotReplayed(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	g := &Guard{Store: store, Logger: zap.NewNop()}
	for _, c := range []struct {
		name       string
		marks      []func(r *http.Request)
		wantStatus int
		wantBody   string
	}{
		{"cut", []func(*http.Request){cut}, 409, "idempotency_answer_not_kept"},
		{"cut, made nothing", []func(*http.Request){cut, unmade}, 200, `{"id":"video_2"}`},
		{"made nothing", []func(*http.Request){unmade}, 200, `{"id":"video_2"}`},
		{"made, also marked unmade", []func(*http.Request){unmade, made}, 200, `{"id":"video_1"}`},
		{"made and cut", []func(*http.Request){made, cut}, 409, "idempotency_answer_not_kept"},
		{"whole", nil, 200, `{"id":"video_1"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			send := func(next http.HandlerFunc) *httptest.ResponseRecorder {
				r := httptest.NewRequest("POST", "/v1/videos", strings.NewReader("a"))
				w := httptest.NewRecorder()
				g.Run(w, r, "acct", c.name, HashOf("a"), apierror.OpenAIShape, next)
				return w
			}
			send(func(w http.ResponseWriter, r *http.Request) {
				MarkForwarded(r.Context())
				for _, mark := range c.marks {
					mark(r)
				}
				w.Write([]byte(`{"id":"video_1"}`))
			})
			retry := send(func(w http.ResponseWriter, r *http.Request) {
				MarkForwarded(r.Context())
				w.Write([]byte(`{"id":"video_2"}`))
			})
			if retry.Code != c.wantStatus || !strings.Contains(retry.Body.String(), c.wantBody) {
				t.Fatalf("retry = %d %s, want %d %s", retry.Code, retry.Body, c.wantStatus, c.wantBody)
			}
			if c.wantStatus == 409 && retry.Header().Get("X-Should-Retry") != "false" {
				t.Error("the retry of a spent key is not told X-Should-Retry: false")
			}
		})
	}
}

func cut(r *http.Request)    { MarkCut(r.Context()) }
func unmade(r *http.Request) { MarkUnmade(r.Context()) }
func made(r *http.Request)   { MarkMade(r.Context()) }
