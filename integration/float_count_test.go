package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// floatCountCaddyfile prices an image model per image, for an account credited a little.
const floatCountCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models atk-image
		}
		price atk-image {
			image 0.04
		}
		key mg-atk-img {
			account atk-img
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
		}
	}
}
`

// TestImageCountReadAsFloatReadersReadIt: n 10.0000000000000001 is not a whole number to the
// gateway (jsonkeys.Integer reads the decimal exactly), so it counts as absent and the request is
// held as 1 image. An upstream that parses JSON numbers as floats (Python's json and pydantic's
// lax int, JavaScript's JSON.parse) reads it as 10.0, a whole number, and makes 10 images: the
// very reading for which the gateway counts 10.0 and 1e1 as 10 (docs/billing.md). An account with
// 0.1 (two images' worth) gets 10 images, and its balance goes below zero by the settlement of
// "the items its answer has, even past its hold". The request must be held at 10 images (and so
// refused here with 402), or refused.
func TestImageCountReadAsFloatReadersReadIt(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" || r.URL.Path != "/v1/images/generations" {
			http.NotFound(w, r)
			return
		}
		var req struct{ N float64 } // a float-parsing reader, as Python's json and JSON.parse are
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &req) != nil || req.N != math.Trunc(req.N) {
			http.Error(w, `{"error":{"message":"n must be an integer"}}`, 400)
			return
		}
		n := max(int(req.N), 1)
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(`{"url":"https://cdn.example.com/img_%d.png"}`, i)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"created":1,"data":[%s]}`, strings.Join(items, ","))
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, floatCountCaddyfile, map[string]string{"up_url": up.URL})
	keysEnv{g: g}.credit(t, "atk-img", "0.1", "atk2-img")
	r := call(t, "POST", base+"/v1/images/generations", "mg-atk-img", `{"model":"atk-image","prompt":"a lighthouse","n":10.0000000000000001}`)
	balance := call(t, "GET", "http://"+g.admin+"/mediagw/accounts/atk-img/balance", "", nil)
	t.Logf("answer %d (%d images); balance now %s", r.status, strings.Count(string(r.body), `"url"`), balance.body)
	if r.status == 200 {
		t.Errorf("n 10.0000000000000001 was held as 1 image and made 10 on a balance of 0.1: %s", balance.body)
	}
}
