package caddymodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// docCaddyfile is a caddyfile block of the documentation, with the file and line it starts on.
type docCaddyfile struct {
	file string
	line int
	text string
}

// docCaddyfiles reads the caddyfile blocks of README.md and docs/*.md.
func docCaddyfiles(t *testing.T) []docCaddyfile {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docCaddyfile
	for _, page := range append([]string{"../README.md"}, pages...) {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(page, "../")
		var cur *docCaddyfile
		for i, line := range strings.Split(string(doc), "\n") {
			switch {
			case cur == nil && line == "```caddyfile":
				cur = &docCaddyfile{file: name, line: i + 1}
			case cur != nil && line == "```":
				blocks = append(blocks, *cur)
				cur = nil
			case cur != nil:
				cur.text += line + "\n"
			}
		}
	}
	return blocks
}

// TestDocCaddyfiles adapts every caddyfile block of the README and the docs pages as written: a
// whole Caddyfile must adapt without a warning (so caddy fmt has nothing to change either), and
// a fragment must adapt where it belongs: in the mediagw global option, in a site, or in a
// route after a provider.
func TestDocCaddyfiles(t *testing.T) {
	blocks := docCaddyfiles(t)
	if len(blocks) < 9 {
		t.Fatalf("found %d caddyfile blocks in README.md and docs/*.md", len(blocks))
	}
	adapter := caddyconfig.GetAdapter("caddyfile")
	contexts := []string{
		"{\n\tmediagw {\n%s\n\t}\n}\n",
		":8080 {\n%s\n}\n",
		"{\n\tmediagw {\n\t\tprovider p {\n\t\t\tbase_url http://127.0.0.1:1/v1\n\t\t\tmodels m\n\t\t}\n\t}\n}\n:8080 {\n\troute {\n%s\n\t}\n}\n",
	}
	for _, b := range blocks {
		_, warnings, err := adapter.Adapt([]byte(b.text), map[string]any{"filename": b.file})
		if err == nil {
			for _, w := range warnings {
				t.Errorf("%s:%d: caddyfile block: warning %s:\n%s", b.file, b.line, w.String(), b.text)
			}
			continue
		}
		errs := []string{err.Error()}
		for _, c := range contexts {
			if _, _, err = adapter.Adapt([]byte(strings.Replace(c, "%s", b.text, 1)), map[string]any{"filename": b.file}); err == nil {
				break
			}
			errs = append(errs, err.Error())
		}
		if err != nil {
			t.Errorf("%s:%d: caddyfile block adapts neither as a Caddyfile nor as a fragment:\n%s\n%s", b.file, b.line, b.text, strings.Join(errs, "\n"))
		}
	}
}
