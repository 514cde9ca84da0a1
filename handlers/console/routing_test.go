package console

import (
	"net/http"
	"strings"
	"testing"
)

// Paths are split before their segments are decoded: an account or key whose name holds a
// slash is one segment (written %2F), reachable at the links the pages write, and an encoded
// slash never makes another route.
func TestEncodedSlashesStayInTheirSegment(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	if _, err := c.h.Keys.CreateKey(t.Context(), []byte(`{"account":"north/east"}`)); err != nil {
		t.Fatal(err)
	}
	c.h.Users["nora"] = User{Name: "nora", PasswordHash: c.h.Users["alice"].PasswordHash, Account: "north/east"}
	nora := c.login("nora")
	resp, page := c.request(http.MethodGet, "/accounts/north%2Feast", nora, nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `href="/accounts/north%2feast"`) && !strings.Contains(page, `href="/accounts/north%2Feast"`) {
		t.Fatalf("a member's account with a slash = %d:\n%s", resp.StatusCode, page)
	}
	if resp, _ := c.request(http.MethodGet, "/", nora, nil, nil); resp.Header.Get("Location") != "/accounts/north%2Feast" {
		t.Fatalf("the overview sends a member to %q", resp.Header.Get("Location"))
	}

	admin := c.login("admin")
	for _, path := range []string{"/accounts/north/east", "/accounts%2Fnorth", "/keys%2Fx%2Frevoke", "/tasks/%2e%2e%2Fkeys"} {
		if resp, _ := c.request(http.MethodGet, path, admin, nil, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/accounts", "/accounts/north%2Feast", "/tasks?account=north%2Feast"} {
		resp, page := c.request(http.MethodGet, path, admin, nil, nil)
		if resp.StatusCode != http.StatusOK || strings.Contains(page, `"/accounts/north/east"`) {
			t.Errorf("GET %s = %d, or it links the account unescaped", path, resp.StatusCode)
		}
	}
	if resp, _ := c.request(http.MethodPut, "/keys", admin, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("PUT /keys = %d", resp.StatusCode)
	}
}
