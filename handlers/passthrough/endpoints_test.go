package passthrough

import (
	"maps"
	"strings"
	"testing"
)

// splitMatch is how Endpoint.match read a path before it walked the segments in place: both
// paths split at "/", compared segment by segment. FuzzEndpointMatch holds the two to the same
// answers.
func splitMatch(e Endpoint, method, path string) (map[string]string, bool) {
	if method != e.Method {
		return nil, false
	}
	want, got := strings.Split(e.Path, "/"), strings.Split(path, "/")
	if len(want) != len(got) {
		return nil, false
	}
	var params map[string]string
	for i, w := range want {
		if !strings.HasPrefix(w, "{") {
			if w != got[i] {
				return nil, false
			}
			continue
		}
		name, suffix, _ := strings.Cut(w[1:], "}")
		value, found := strings.CutSuffix(got[i], suffix)
		if !found || value == "" || strings.Contains(value, ":") {
			return nil, false
		}
		if params == nil {
			params = map[string]string{}
		}
		params[name] = value
	}
	return params, true
}

func FuzzEndpointMatch(f *testing.F) {
	for _, e := range Capabilities {
		f.Add(e.Method, e.Path, strings.NewReplacer("{id}", "resp_1", "{model}", "gemini-2.5").Replace(e.Path))
		f.Add(e.Method, e.Path, e.Path+"/")
	}
	f.Add("POST", "/v1/{model}/x/{model}:go", "/v1/a/x/b:go")
	f.Add("POST", "/v1beta/models/{model}:generateContent", "/v1beta/models/:generateContent")
	f.Add("POST", "/v1beta/models/{model}:generateContent", "/v1beta/models/a:b:generateContent")
	f.Add("GET", "/v1/responses/{id}", "//v1/responses/x")
	f.Add("GET", "/", "/")
	f.Add("GET", "", "")
	f.Fuzz(func(t *testing.T, method, pattern, path string) {
		e := Endpoint{Method: "POST", Path: pattern}
		want, wantOK := splitMatch(e, method, path)
		got, gotOK := e.match(method, path)
		if gotOK != wantOK || !maps.Equal(got, want) {
			t.Fatalf("match(%q, %q) of %q = %v %v, split at / %v %v", method, path, pattern, got, gotOK, want, wantOK)
		}
	})
}

// Finding a request's endpoint runs the match of every endpoint before it: for a chat
// completion, past every generate-content path. It allocates only the parameters of a match.
func TestEndpointLookupAllocations(t *testing.T) {
	rt := &Router{}
	for _, c := range []struct {
		method, path string
		allocs       float64
	}{
		{"POST", "/v1/chat/completions", 0},
		{"POST", "/v1/rerank", 0},
		{"POST", "/v1/not/an/endpoint", 0},
		{"GET", "/v1/videos/video_1/content", 2}, // the map of its one parameter
	} {
		got := testing.AllocsPerRun(100, func() {
			if _, _, ok := rt.endpoint(c.method, c.path); !ok && c.path != "/v1/not/an/endpoint" {
				t.Fatalf("%s %s: no endpoint", c.method, c.path)
			}
		})
		if got > c.allocs {
			t.Errorf("%s %s: %.0f allocations, want at most %.0f", c.method, c.path, got, c.allocs)
		}
	}
}

// FuzzEndpointLookup holds the router's look-up of a request's endpoint (literalCapabilities
// first) to the scan of Capabilities, then of the operator's endpoints, that it stands for: the
// same endpoint, the same parameters, for any method and path.
func FuzzEndpointLookup(f *testing.F) {
	for _, e := range Capabilities {
		f.Add(e.Method, strings.NewReplacer("{id}", "resp_1", "{model}", "gemini-2.5").Replace(e.Path))
		f.Add(e.Method, e.Path)
		f.Add("PUT", e.Path)
		f.Add(e.Method, e.Path+"/")
		f.Add(strings.ToLower(e.Method), strings.ToUpper(e.Path))
	}
	f.Add("POST", "/v1/moderations")
	f.Add("POST", "/v1/chat/completions/")
	extra, err := ParseEndpoint("POST", "/v1/moderations")
	if err != nil {
		f.Fatal(err)
	}
	rt := &Router{Extra: []Endpoint{extra}}
	f.Fuzz(func(t *testing.T, method, path string) {
		got, gotParams, gotOK := rt.endpoint(method, path)
		var want Endpoint
		var wantParams map[string]string
		wantOK := false
		for _, list := range [][]Endpoint{Capabilities, rt.Extra} {
			for _, e := range list {
				if params, ok := e.match(method, path); ok && !wantOK {
					want, wantParams, wantOK = e, params, true
				}
			}
		}
		if gotOK != wantOK || got.Method != want.Method || got.Path != want.Path || !maps.Equal(gotParams, wantParams) {
			t.Fatalf("endpoint(%q, %q) = %s %s %v %v, the scan finds %s %s %v %v", method, path, got.Method, got.Path, gotParams, gotOK, want.Method, want.Path, wantParams, wantOK)
		}
	})
}

// TestEveryLiteralCapabilityIsLookedUp: each capability without a parameter is found by the
// look-up, not by the scan, so that the usual request costs one.
func TestEveryLiteralCapabilityIsLookedUp(t *testing.T) {
	for i, e := range Capabilities {
		if strings.Contains(e.Path, "{") {
			continue
		}
		if j, ok := literalCapabilities[endpointKey{e.Method, e.Path}]; !ok || j != i {
			t.Errorf("%s %s: look-up %d %v, want %d", e.Method, e.Path, j, ok, i)
		}
	}
}
