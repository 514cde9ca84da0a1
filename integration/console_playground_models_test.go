package integration

import (
	"net/http"
	"strings"
	"testing"
)

// A member sees the models they may use, on every page: the prices page lists only the models
// the member's key (or their account's usable keys) allows, as the gateway's model list does for
// that key, so that a model the operator serves to another tenant (a tenant's fine-tune, named
// after it) is not shown to this one. The playground's model list is another such page: it must
// not offer, and so name, models the member's key may not use.
func TestConsolePlaygroundListsOnlyTheMembersModels(t *testing.T) {
	cfg := strings.Replace(consoleCaddyfile, "\t\t\tmodels sim-video\n", "\t\t\tmodels sim-video beta-private-finetune\n", 1)
	if cfg == consoleCaddyfile {
		t.Fatal("the console Caddyfile changed shape")
	}
	e := startConsoleWith(t, cfg)
	r := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", `{"account":"acme","models":["sim-video"]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("admin key = %d %s", r.status, r.body)
	}
	member := e.keyLogin(t, r.field("key"))
	if status, _, page := member.do(http.MethodGet, "/prices", nil); status != http.StatusOK || strings.Contains(page, "beta-private-finetune") || !strings.Contains(page, "sim-video") {
		t.Fatalf("the member's prices page = %d, names beta-private-finetune: %v", status, strings.Contains(page, "beta-private-finetune"))
	}
	status, _, page := member.do(http.MethodGet, "/playground", nil)
	if status != http.StatusOK || !strings.Contains(page, "sim-video") {
		t.Fatalf("the member's playground = %d", status)
	}
	if strings.Contains(page, "beta-private-finetune") {
		t.Error("the playground of a member whose key may use sim-video only offers beta-private-finetune, which their prices page does not show")
	}
}
