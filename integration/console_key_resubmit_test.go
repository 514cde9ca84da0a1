package integration

import (
	"net/http"
	"net/url"
	"testing"
)

// A key form sent twice (a double click, or the browser's "resubmit the form?" on a reload of the
// page that showed the secret) creates one key, as a credit form sent twice credits once: the
// second create would show a second secret in place of the first, which the user believes they
// copied, and count a second time against member_keys' max and creates_per_hour.
func TestConsoleKeyFormSentTwiceCreatesOneKey(t *testing.T) {
	e := startConsole(t)
	admin := e.login(t, "admin")
	admin.do(http.MethodGet, "/keys", nil) // the form, with its token
	form := url.Values{"account": {"beta"}, "models": {"sim-video"}, "key_token": {admin.keyToken}}
	first, _, _ := admin.post("/keys", form)
	second, _, _ := admin.post("/keys", form)
	made := e.madeKeys(t, "beta")
	if first != http.StatusCreated || made != 1 {
		t.Fatalf("the same key form posted twice = %d then %d, and made %d keys in beta, want one", first, second, made)
	}
}
