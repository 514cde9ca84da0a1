package integration

import (
	"fmt"
	"net/http"
	"testing"
)

// A site whose vars or map handlers (which Caddy's directive order runs before mediagw_auth)
// name {http.auth.user.id} or {mediagw.account}: what mediagw_auth publishes once the key is
// accepted is what every handler after it reads, never a value the client chose.
const authPlaceholdersCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		key mg-good {
			id good-key
			account acme
		}
	}
}

http://127.0.0.1:{{port}} {
	vars http.auth.user.id {header.X-Claimed-Id}
	map {header.X-Claimed-Account} {mediagw.account} {
		default {header.X-Claimed-Account}
	}
	mediagw_auth
	respond "id={http.auth.user.id} account={mediagw.account}"
}
`

func TestAuthPlaceholdersWinOverEarlierHandlers(t *testing.T) {
	port := freePort(t)
	startGateway(t, authPlaceholdersCaddyfile, map[string]string{"port": fmt.Sprint(port)})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	req, err := http.NewRequest("GET", base+"/anything", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer mg-good")
	req.Header.Set("X-Claimed-Id", "someone-else")
	req.Header.Set("X-Claimed-Account", "victim")
	r := do(t, req)
	want := "id=good-key account=acme"
	if r.status != 200 || string(r.body) != want {
		t.Fatalf("got %d %q, want 200 %q", r.status, r.body, want)
	}
}
