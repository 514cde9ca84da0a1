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
