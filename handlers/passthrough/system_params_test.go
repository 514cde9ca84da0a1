package passthrough

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
)

// TestSystemParams: Google's system parameters that change what the provider reads ($ct, in any
// spelling a query decoder reads; $httpMethod) are refused on every call, and those that change
// what a charged call's answer shows the gateway (a field mask, alt other than json or sse, JSONP)
// on charged calls; the others pass.
func TestSystemParams(t *testing.T) {
	rt := &Router{Catalog: catalog(t)}
	const generate = "/v1beta/models/gemini-pro:generateContent"
	const count = "/v1beta/models/gemini-pro:countTokens"
	body := `{"contents":[{"parts":[{"text":"hi"}]}]}`
	for _, tc := range []struct {
		path, header, param string
	}{
		{generate + "?$ct=application%2Fjson%3B+charset%3Dutf-7", "", "$ct"},
		{generate + "?%24ct=application%2Fjson%3B+charset%3Dutf-16", "", "$ct"},
		{generate + "?alt=sse&%24CT=text%2Fplain", "", "$ct"},
		{count + "?$ct=application%2Fjson%3B+charset%3Dutf-7", "", "$ct"},
		{generate + "?$httpMethod=GET", "", "$httpMethod"},
		{generate + "?fields=candidates", "", "fields"},
		{generate + "?%24fields=candidates%2CusageMetadata.promptTokenCount", "", "$fields"},
		{generate, "X-Goog-FieldMask", "X-Goog-FieldMask"},
		{generate, "x-goog-fieldmask", "X-Goog-FieldMask"},
		{generate, "X_Goog_FieldMask", "X-Goog-FieldMask"},
		{generate + "?alt=proto", "", "alt"},
		{generate + "?$alt=media", "", "$alt"},
		{generate + "?alt=sse&alt=proto", "", "alt"},
		{generate + "?alt=sse&$alt=sse", "", "$alt"},
		{generate + "?callback=f", "", "callback"},
		{generate + "?%24callback=f", "", "$callback"},
		// What passes: the formats the gateway reads, and what changes neither the work nor
		// the usage reported.
		{generate + "?alt=sse", "", ""},
		{generate + "?alt=json&prettyPrint=false&quotaUser=u1&%24.xgafv=2", "", ""},
		// A call that is not charged (a count of tokens) may filter its answer.
		{count + "?fields=totalTokens", "X-Goog-FieldMask", ""},
		{count + "?alt=proto&callback=f", "", ""},
	} {
		r := httptest.NewRequest("POST", tc.path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		if tc.header != "" {
			r.Header[tc.header] = []string{"candidates"}
		}
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "a"})
		var e *apierror.Error
		switch {
		case tc.param == "" && err != nil:
			t.Errorf("%s %s: refused: %v", tc.path, tc.header, err)
		case tc.param != "" && (!errors.As(err, &e) || e.Status != 400 || e.Param != tc.param):
			t.Errorf("%s %s: err = %v, want 400 naming %s", tc.path, tc.header, err, tc.param)
		}
		if err == nil {
			route.Done()
		}
	}
}
