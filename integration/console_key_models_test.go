package integration

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// keyModelsConsoleCaddyfile is the priced console Caddyfile with a second model, sim-secret, and a
// key of acme, mg-console-acme-v, that may use sim-video only.
var keyModelsConsoleCaddyfile = strings.NewReplacer(
	"models sim-video\n", "models sim-video sim-secret\n",
	"\t\tkey mg-console-acme {", "\t\tprice sim-secret {\n\t\t\tsecond 0.5\n\t\t}\n\t\tkey mg-console-acme-v {\n\t\t\tid acme-video-key\n\t\t\taccount acme\n\t\t\tmodels sim-video\n\t\t}\n\t\tkey mg-console-acme {",
).Replace(pricedConsoleCaddyfile)

var createdKeyID = regexp.MustCompile(`Key ([^ <]+) was created`)

// A member who logged in with a key restricted to some models sees in the console what the
// gateway's API shows that key: the account's tasks of those models only. Another key of the
// account makes a sim-secret task; the sim-video key's member does not find it in the task search
// (with or without a model filter), gets 404 for its page, and sees its ledger entries without
// its id; and the keys that member creates are bounded by the login key (its models), so it cannot
// make itself a key that reaches the hidden task through the API. A password member of the
// account sees the task. Before the fix the search listed it, its page showed it, the ledger named
// it, and a key created with no models could use (and read) every model.
func TestConsoleKeyRestrictedToModelsSeesOnlyTheirTasks(t *testing.T) {
	if !strings.Contains(keyModelsConsoleCaddyfile, "models sim-video sim-secret") || !strings.Contains(keyModelsConsoleCaddyfile, "acme-video-key") {
		t.Fatal("the console's Caddyfile changed: the second model or the restricted key was not added")
	}
	e := startConsoleWith(t, keyModelsConsoleCaddyfile)
	hidden := e.createTask(t, "mg-console-acme", `{"model":"sim-secret","content":[{"type":"text","text":"the hidden harbour"}],"duration":5}`)
	own := e.createTask(t, "mg-console-acme-v", `{"model":"sim-video","content":[{"type":"text","text":"the open lighthouse"}],"duration":5}`)
	waitTaskStatus(t, e.base, "mg-console-acme", hidden, "succeeded")
	waitTaskStatus(t, e.base, "mg-console-acme-v", own, "succeeded")
	// The gateway's API: the restricted key does not see the hidden task.
	if r := call(t, http.MethodGet, e.base+"/api/v3/contents/generations/tasks/"+hidden, "mg-console-acme-v", nil); r.status != http.StatusBadRequest {
		t.Fatalf("the API shows the sim-video key the sim-secret task: %d %s", r.status, r.body)
	}

	alice := e.login(t, "alice")
	waitFor(t, "both settlements on alice's account page", func() bool {
		_, _, page := alice.do(http.MethodGet, "/accounts/acme", nil)
		return strings.Count(page, "<td>settle</td>") == 2
	})
	if _, _, page := alice.do(http.MethodGet, "/tasks", nil); !strings.Contains(page, hidden) || !strings.Contains(page, own) {
		t.Fatal("alice, a password member of acme, does not see both of its tasks")
	}
	if status, _, _ := alice.do(http.MethodGet, "/tasks/"+hidden, nil); status != http.StatusOK {
		t.Fatalf("alice's page of the sim-secret task = %d", status)
	}

	m := e.keyLogin(t, "mg-console-acme-v")
	for _, path := range []string{"/tasks", "/tasks?model=sim-secret", "/tasks?status=succeeded", "/tasks?account=acme&model=sim-secret"} {
		status, _, page := m.do(http.MethodGet, path, nil)
		if status != http.StatusOK || strings.Contains(page, hidden) || strings.Contains(page, "hidden harbour") {
			t.Errorf("GET %s as the sim-video key's member = %d, showing the sim-secret task: %v", path, status, strings.Contains(page, hidden))
		}
		if path == "/tasks" && !strings.Contains(page, own) {
			t.Errorf("GET /tasks as the sim-video key's member does not show its own sim-video task")
		}
	}
	if status, _, page := m.do(http.MethodGet, "/tasks/"+hidden, nil); status != http.StatusNotFound || strings.Contains(page, "hidden harbour") {
		t.Errorf("the sim-secret task's page as the sim-video key's member = %d", status)
	}
	if status, _, _ := m.do(http.MethodGet, "/tasks/"+own, nil); status != http.StatusOK {
		t.Errorf("the sim-video task's page as its key's member = %d", status)
	}
	if status, h, _ := m.do(http.MethodGet, "/tasks?id="+hidden, nil); status != http.StatusSeeOther || h.Get("Location") != "/tasks/"+hidden {
		t.Errorf("the task search's id box = %d %v", status, h)
	}
	// The ledger keeps its amounts (the balance is the account's) but names no hidden task.
	if status, _, page := m.do(http.MethodGet, "/accounts/acme", nil); status != http.StatusOK || strings.Contains(page, hidden) || strings.Count(page, "<td>settle</td>") != 2 {
		t.Errorf("acme's page as the sim-video key's member = %d, naming the sim-secret task: %v", status, strings.Contains(page, hidden))
	}

	if status, _, page := m.do(http.MethodGet, "/prices", nil); status != http.StatusOK || strings.Contains(page, "sim-secret") || !strings.Contains(page, "sim-video") {
		t.Errorf("the prices page as the sim-video key's member = %d, listing sim-secret: %v", status, strings.Contains(page, "sim-secret"))
	}
	if _, _, page := alice.do(http.MethodGet, "/prices", nil); !strings.Contains(page, "sim-secret") {
		t.Error("the prices page as alice, whose account's keys may use sim-secret, does not list it")
	}
	if status, _, file := m.do(http.MethodGet, "/accounts/acme/ledger.csv", nil); status != http.StatusOK || strings.Contains(file, hidden) || !strings.Contains(file, own) {
		t.Errorf("acme's ledger CSV as the sim-video key's member = %d, naming the sim-secret task: %v", status, strings.Contains(file, hidden))
	}

	// Keys the restricted member creates carry the login key's models, as the form says.
	if _, _, page := m.do(http.MethodGet, "/keys", nil); !strings.Contains(page, "empty for those of the key you logged in with: sim-video)") {
		t.Error("the key form tells the sim-video key's member that an empty models field means every model")
	}
	for _, models := range []string{"sim-secret", "sim-*", "*", "sim-video sim-secret"} {
		if status, _, page := m.post("/keys", url.Values{"models": {models}}); status != http.StatusForbidden || strings.Contains(page, `id="secret"`) {
			t.Errorf("a key of models %q created by the sim-video key's member = %d", models, status)
		}
	}
	status, _, page := m.post("/keys", url.Values{"models": {""}})
	created := createdKeyID.FindStringSubmatch(page)
	if status != http.StatusCreated || created == nil {
		t.Fatalf("a key created by the sim-video key's member = %d:\n%s", status, page)
	}
	r := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/keys/"+created[1], "", nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"models":["sim-video"]`) {
		t.Fatalf("the key the sim-video key's member created = %d %s", r.status, r.body)
	}

	// It revokes keys of its own models, not a key that may use every model.
	wide := call(t, http.MethodPost, "http://"+e.g.admin+"/mediagw/keys", "", `{"account":"acme"}`)
	if wide.status != http.StatusCreated {
		t.Fatalf("admin key = %d %s", wide.status, wide.body)
	}
	if status, _, _ := m.post("/keys/"+wide.field("id")+"/revoke", nil); status != http.StatusForbidden {
		t.Errorf("revoking an every-model key as the sim-video key's member = %d", status)
	}
	if r := call(t, http.MethodGet, "http://"+e.g.admin+"/mediagw/keys/"+wide.field("id"), "", nil); r.status != http.StatusOK {
		t.Errorf("the every-model key after the restricted member's revoke = %d", r.status)
	}
	if status, _, _ := m.post("/keys/"+created[1]+"/revoke", nil); status != http.StatusSeeOther {
		t.Errorf("revoking its own sim-video key as the sim-video key's member = %d", status)
	}
}
