package caddymodule

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig"
)

// TestEverySubdirectiveDocumented asks each Caddyfile block of mediagw which subdirectives it
// takes (the error for an unknown one lists them) and checks that the docs pages name every one
// in code (`name`), as they name every handler directive.
func TestEverySubdirectiveDocumented(t *testing.T) {
	var docs strings.Builder
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	documented := func(name string) bool {
		return strings.Contains(docs.String(), "`"+name+"`") || strings.Contains(docs.String(), "`"+name+" ")
	}

	// Each block, as the openers that lead to it from the top of a Caddyfile.
	global := func(openers ...string) []string { return append([]string{"{", "mediagw {"}, openers...) }
	blocks := map[string][]string{
		"mediagw":       global(),
		"provider":      global("provider p {"),
		"upstream":      global("provider p {", "upstream u {"),
		"key":           global("key k {"),
		"watcher":       global("watcher {"),
		"callbacks":     global("callbacks {"),
		"upload":        global("upload {"),
		"keep_results":  global("upload {", "keep_results {"),
		"storage redis": global("storage redis redis://127.0.0.1:1 {"),
		"video_tasks":   {":8080 {", "mediagw_video_tasks {"},
		"videos":        {":8080 {", "mediagw_videos {"},
		"image_edits":   {":8080 {", "mediagw_image_edits {"},
		"simulator":     {":8080 {", "mediagw_simulator {"},
		"route":         {":8080 {", "mediagw_route {"},
		"log output":    {"{", "log {", "output mediagw_buffered {"},
	}
	takes := regexp.MustCompile(`the block takes ((?:"[a-z_]+"(?:, )?)+)`)
	adapter := caddyconfig.GetAdapter("caddyfile")
	total := 0
	for block, openers := range blocks {
		_, _, err := adapter.Adapt([]byte(nested(openers, "zzzunknownzzz")), nil)
		m := takes.FindStringSubmatch(errString(err))
		if m == nil {
			t.Errorf("%s: the error for an unknown subdirective lists nothing: %v", block, err)
			continue
		}
		for _, quoted := range strings.Split(m[1], ", ") {
			name := strings.Trim(quoted, `"`)
			total++
			if !documented(name) {
				t.Errorf("the %s block takes %s, which no page of docs/ names as `%s`", block, name, name)
			}
		}
	}
	if total < 60 {
		t.Errorf("found %d subdirectives; the probe is broken", total)
	}
	for _, directive := range []string{"mediagw_auth", "mediagw_callback_relay", "mediagw_models", "mediagw_presign",
		"mediagw_video_tasks", "mediagw_videos", "mediagw_image_edits", "mediagw_route", "mediagw_simulator", "mediagw_buffered"} {
		if !documented(directive) {
			t.Errorf("no page of docs/ names the directive `%s`", directive)
		}
	}
}

// nested is a Caddyfile of the openers, each inside the one before, with line in the innermost.
func nested(openers []string, line string) string {
	var b strings.Builder
	for i, o := range openers {
		b.WriteString(strings.Repeat("\t", i) + o + "\n")
	}
	b.WriteString(strings.Repeat("\t", len(openers)) + line + "\n")
	for i := len(openers) - 1; i >= 0; i-- {
		b.WriteString(strings.Repeat("\t", i) + "}\n")
	}
	return b.String()
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
