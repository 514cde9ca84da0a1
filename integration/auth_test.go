package integration

import (
	"fmt"
	"strings"
	"testing"
)

const authCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		disabled_accounts frozen
		key mg-good {
			id good-key
			account acme
		}
		key mg-disabled {
			account acme
			disabled
		}
		key mg-expired {
			account acme
			expires 2020-01-01T00:00:00Z
		}
		key mg-frozen {
			account frozen
		}
		key mg-elsewhere {
			account acme
			allow_ips 10.0.0.0/8 2001:db8::/32
		}
		key mg-local {
			account acme
			allow_ips 127.0.0.1 ::1
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		respond "id={http.auth.user.id} account={mediagw.account} authorization={header.Authorization} x-api-key={header.X-Api-Key}"
	}
}
`

func TestAuthOutcomes(t *testing.T) {
	port := freePort(t)
	startGateway(t, authCaddyfile, map[string]string{"port": fmt.Sprint(port)})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	for _, tc := range []struct {
		name   string
		key    string
		status int
		code   string
	}{
		{"missing key", "", 401, "missing_api_key"},
		{"unknown key", "mg-unknown", 401, "invalid_api_key"},
		{"disabled key", "mg-disabled", 403, "key_disabled"},
		{"expired key", "mg-expired", 403, "key_expired"},
		{"disabled account", "mg-frozen", 403, "account_disabled"},
		{"address outside allow_ips", "mg-elsewhere", 403, "ip_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Outside the task API: the OpenAI shape.
			r := call(t, "GET", base+"/v1/models", tc.key, nil)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d; body %s", r.status, tc.status, r.body)
			}
			e, ok := r.json(t)["error"].(map[string]any)
			if !ok || e["code"] != tc.code || e["message"] == "" || e["type"] == "" {
				t.Fatalf("OpenAI error body = %s, want code %s", r.body, tc.code)
			}
			if tc.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer challenge: %q", r.header.Get("WWW-Authenticate"))
			}
			// On the task API: the task shape.
			r = call(t, "GET", base+"/api/v3/contents/generations/tasks/cgt-1", tc.key, nil)
			body := r.json(t)
			if r.status != tc.status || body["code"] != tc.code || body["message"] == "" {
				t.Fatalf("task error = %d %s, want %d code %s", r.status, r.body, tc.status, tc.code)
			}
			if v, ok := body["data"]; !ok || v != nil {
				t.Fatalf("task error body must carry data: null: %s", r.body)
			}
		})
	}

	t.Run("valid key: identity published, credentials removed", func(t *testing.T) {
		r := call(t, "GET", base+"/anything", "mg-good", nil)
		want := "id=good-key account=acme authorization= x-api-key="
		if r.status != 200 || string(r.body) != want {
			t.Fatalf("got %d %q, want 200 %q", r.status, r.body, want)
		}
	})
	t.Run("address inside allow_ips", func(t *testing.T) {
		r := call(t, "GET", base+"/anything", "mg-local", nil)
		if r.status != 200 || !strings.HasPrefix(string(r.body), "id=key_") {
			t.Fatalf("got %d %q", r.status, r.body)
		}
	})
}
