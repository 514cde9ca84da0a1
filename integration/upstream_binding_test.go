package integration

import (
	"net/http"
	"strings"
	"testing"
)

// A task stays bound to the address of the upstream that made it: when the operator reuses the
// upstream's name for another account at another base URL, the task is never asked about there
// (its id would reach a third party, with the new account's key), and it finishes as failed with
// a message that says why.
func TestTaskOfReusedUpstreamNameFails(t *testing.T) {
	a, b := newArkChannel(t, "a", "key-a"), newArkChannel(t, "b", "key-b")
	base, g := startSimGateway(t, channelTasksCaddyfile, map[string]string{
		"a_url": a.URL, "a_priority": "0", "b_block": "", "provider": uniqueName("ark"),
	})
	r := call(t, http.MethodPost, base+"/api/v3/contents/generations/tasks", "mg-tasks", taskBody)
	if r.status != http.StatusOK || r.field("id") != "cgt-a-1" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	// Upstream a is now B's account: another base URL and B's key, under the same name.
	g.vars["a_url"] = b.URL
	if err := g.reload(strings.Replace(channelTasksCaddyfile, "api_key key-a", "api_key key-b", 1)); err != nil {
		t.Fatal(err)
	}
	r = call(t, http.MethodGet, base+"/api/v3/contents/generations/tasks/cgt-a-1", "mg-tasks", nil)
	var task struct {
		Status string
		Error  struct{ Code, Message string }
	}
	decodeJSON(t, r.body, &task)
	if r.status != http.StatusOK || task.Status != "failed" || !strings.Contains(task.Error.Message, "/a that ran this task is now configured with another base URL") {
		t.Fatalf("query: %d %s", r.status, r.body)
	}
	if r := call(t, http.MethodDelete, base+"/api/v3/contents/generations/tasks/cgt-a-1", "mg-tasks", nil); r.status == http.StatusOK {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if _, bCalls, _ := b.snapshot(); len(bCalls) != 0 {
		t.Fatalf("B was asked about A's task: %v", bCalls)
	}
}
