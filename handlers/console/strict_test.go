package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestStrictRequest(t *testing.T) {
	for _, c := range []struct {
		method, target, body, want string
	}{
		{"GET", "/keys?account=acme&after=key_1", "", ""},
		{"GET", "/keys?account=%zz", "", "does not decode"},
		{"GET", "/keys?account=a;b", "", "does not decode"},
		{"GET", "/keys?account=a&account=b", "", "account is given more than once in the address"},
		{"GET", "/keys?account=acme%FF", "", "account in the address is not UTF-8"},
		{"GET", "/keys?%FF=1", "", "field name in the address is not UTF-8"},
		{"POST", "/keys", "csrf=x&account=acme&models=a+b", ""},
		{"POST", "/keys", "amount=1&amount=1000", "amount is given more than once in the form"},
		{"POST", "/keys", "account=acme%FF", "account in the form is not UTF-8"},
		{"POST", "/keys", "account=%zz", "form does not decode"},
		{"POST", "/keys", "note=" + strings.Repeat("a", maxForm), "larger than the console reads"},
	} {
		r := httptest.NewRequest(c.method, c.target, strings.NewReader(c.body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, maxForm)
		got := strictRequest(r)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s %s %.40q: %q, want %q", c.method, c.target, c.body, got, c.want)
		}
	}
}
