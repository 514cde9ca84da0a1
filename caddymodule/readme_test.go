package caddymodule

import (
	"os"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestReadmeCaddyfiles adapts every caddyfile block of the README as written: a whole Caddyfile
// must adapt without a warning (so caddy fmt has nothing to change either), and a fragment must
// adapt where it belongs: in the mediagw global option, in a site, or in a route after a provider.
func TestReadmeCaddyfiles(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(readme), "\n") {
		switch {
		case cur == nil && line == "```caddyfile":
			cur = new(strings.Builder)
		case cur != nil && line == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if len(blocks) < 8 {
		t.Fatalf("found %d caddyfile blocks in README.md", len(blocks))
	}
	adapter := caddyconfig.GetAdapter("caddyfile")
	contexts := []string{
		"{\n\tmediagw {\n%s\n\t}\n}\n",
		":8080 {\n%s\n}\n",
		"{\n\tmediagw {\n\t\tprovider p {\n\t\t\tbase_url http://127.0.0.1:1/v1\n\t\t\tmodels m\n\t\t}\n\t}\n}\n:8080 {\n\troute {\n%s\n\t}\n}\n",
	}
	for i, block := range blocks {
		_, warnings, err := adapter.Adapt([]byte(block), map[string]any{"filename": "README.md"})
		if err == nil {
			for _, w := range warnings {
				t.Errorf("README caddyfile block %d: warning %s:\n%s", i+1, w.String(), block)
			}
			continue
		}
		errs := []string{err.Error()}
		for _, c := range contexts {
			if _, _, err = adapter.Adapt([]byte(strings.Replace(c, "%s", block, 1)), map[string]any{"filename": "README.md"}); err == nil {
				break
			}
			errs = append(errs, err.Error())
		}
		if err != nil {
			t.Errorf("README caddyfile block %d adapts neither as a Caddyfile nor as a fragment:\n%s\n%s", i+1, block, strings.Join(errs, "\n"))
		}
	}
}
