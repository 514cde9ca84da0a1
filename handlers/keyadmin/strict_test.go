package keyadmin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// A key body that apply takes is one that every decoder reads alike: no member repeats, none
// differs from a field only by case, and none is unknown, at the top level or inside budget and
// rate; a refusal names the member.
func TestApplyIsStrict(t *testing.T) {
	for body, names := range map[string]string{
		`{"account":"a","account":"b"}`:                                               `"account" appears more than once`,
		`{"account":"a","ACCOUNT":"b"}`:                                               `"ACCOUNT" differs from "account" only by letter case`,
		`{"account":"a","acc\u006funt":"b"}`:                                          `"account" appears more than once`,
		`{"account":"a","rate":{"requests":1,"window":"1m","Requests":9}}`:            `rate: the key "Requests"`,
		`{"account":"a","budget":{"amount":"1","amount":"9"}}`:                        `budget: the key "amount" appears more than once`,
		`{"account":"a","budget":{"amount":"1","limit":"9"}}`:                         `budget: unknown member "limit"`,
		`{"account":"a","budget":["1"]}`:                                              `budget must be a JSON object`,
		`{"account":"a","extra":1}`:                                                   `the body: unknown member "extra"`,
		`[{"account":"a"}]`:                                                           `must be a JSON object`,
		`{"account":"a","budget":{"amount":2.5}}`:                                     `budget must be {"amount": "25.50"`,
		`{"account":"a","budget":{"amount": 25}}`:                                     `budget must be {"amount": "25.50"`,
		`{"account":"a","models":["` + strings.Repeat("m", MaxModelPattern+1) + `"]}`: `a pattern is at most 512 bytes`,
		"{\"account\":\"a\xff\"}":                                                     `not UTF-8 text`,
	} {
		var k storage.APIKey
		if err := apply(&k, []byte(body)); err == nil || !strings.Contains(err.Error(), names) {
			t.Errorf("apply(%s) = %v; want an error with %q", body, err, names)
		}
	}
	var k storage.APIKey
	if err := apply(&k, []byte(`{"account":"a","rate":{"requests":2,"window":"1m"},"budget":{"amount":"1.5","period":"day"},"expires":null}`)); err != nil {
		t.Fatal(err)
	}
	if k.Account != "a" || k.RateRequests != 2 || k.Budget.Limit != 1_500_000 || k.Budget.Period != "day" {
		t.Fatalf("applied %+v", k)
	}
}

// apply never panics, and what it takes has each top-level member once, spelled as a field.
func FuzzApply(f *testing.F) {
	for _, seed := range []string{`{"account":"a"}`, `{"account":"a","account":"b"}`, `{"Rate":{"requests":1,"window":"1m"}}`,
		`{"budget":{"amount":"1"},"quota":null}`, `{"expires":"0001-01-01T00:00:00Z","account":"a"}`, `{}`, `null`, `{"a":`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var k storage.APIKey
		if apply(&k, body) != nil {
			return
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatalf("apply took %q, which encoding/json cannot read: %v", body, err)
		}
		for name := range fields {
			if _, ok := keyFields[name]; !ok {
				t.Fatalf("apply took %q with the member %q", body, name)
			}
		}
		if !k.ExpiresAt.IsZero() && k.ExpiresAt.Before(storage.EarliestKeyExpiry) {
			t.Fatalf("apply took %q with an expiry before 2000", body)
		}
	})
}
