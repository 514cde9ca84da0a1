package integration

import (
	"net/http"
	"strings"
	"testing"
)

// TestCreatedIDThatQuotesTheKeyIsNotShown: an Ark provider that answers a create with the
// operator's key as the task's id (as written, or inside a longer id) would have the gateway hand
// the client that key as its task id, in the create's answer and in every list. Such an id is
// one the gateway cannot use (502 invalid_response, the task's estimate charged as for any id it
// cannot follow), and the key appears nowhere. Before, the create answered it.
func TestCreatedIDThatQuotesTheKeyIsNotShown(t *testing.T) {
	const operatorKey = "ark-operator-key" // relayEchoCaddyfile's api_key
	ids := []string{operatorKey, "cgt-" + operatorKey + "-1"}
	calls := 0
	ark := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost && calls < len(ids) {
			w.Write([]byte(`{"id":"` + ids[calls] + `"}`))
			calls++
			return
		}
		w.Write([]byte(`{"items":[],"total":0}`))
	}))
	base, _ := startSimGateway(t, relayEchoCaddyfile, map[string]string{"ark": ark.URL})
	for range ids {
		r := call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-relay-echo",
			`{"model":"ark-video","content":[{"type":"text","text":"a swing"}]}`)
		if r.status != http.StatusBadGateway || errorCode(t, r) != "invalid_response" || strings.Contains(string(r.body), operatorKey) {
			t.Errorf("a create answered with the key in its id = %d %s; want 502 invalid_response without the key", r.status, r.body)
		}
	}
	r := call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks?page_size=10", "mg-relay-echo", nil)
	if r.status != http.StatusOK || strings.Contains(string(r.body), operatorKey) {
		t.Errorf("the task list = %d %s; want no task named by the key", r.status, r.body)
	}
}
