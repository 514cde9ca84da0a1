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

	const unknown = "zzzunknownzzz"
	blocks := map[string]string{
		"mediagw":       "{\n\tmediagw {\n\t\t" + unknown + "\n\t}\n}\n",
		"provider":      "{\n\tmediagw {\n\t\tprovider p {\n\t\t\t" + unknown + "\n\t\t}\n\t}\n}\n",
		"upstream":      "{\n\tmediagw {\n\t\tprovider p {\n\t\t\tupstream u {\n\t\t\t\t" + unknown + "\n\t\t\t}\n\t\t}\n\t}\n}\n",
		"key":           "{\n\tmediagw {\n\t\tkey k {\n\t\t\t" + unknown + "\n\t\t}\n\t}\n}\n",
		"watcher":       "{\n\tmediagw {\n\t\twatcher {\n\t\t\t" + unknown + "\n\t\t}\n\t}\n}\n",
		"callbacks":     "{\n\tmediagw {\n\t\tcallbacks {\n\t\t\t" + unknown + "\n\t\t}\n\t}\n}\n",
		"upload":        "{\n\tmediagw {\n\t\tupload {\n\t\t\t" + unknown + "\n\t\t}\n\t}\n}\n",
		"storage redis": "{\n\tmediagw {\n\t\tstorage redis redis://127.0.0.1:1 {\n\t\t\t" + unknown + "\n\t\t}\n\t}\n}\n",
		"video_tasks":   ":8080 {\n\tmediagw_video_tasks {\n\t\t" + unknown + "\n\t}\n}\n",
		"image_edits":   ":8080 {\n\tmediagw_image_edits {\n\t\t" + unknown + "\n\t}\n}\n",
		"simulator":     ":8080 {\n\tmediagw_simulator {\n\t\t" + unknown + "\n\t}\n}\n",
		"route":         ":8080 {\n\tmediagw_route {\n\t\t" + unknown + "\n\t}\n}\n",
		"log output":    "{\n\tlog {\n\t\toutput mediagw_buffered {\n\t\t\t" + unknown + "\n\t\t}\n\t}\n}\n",
	}
	takes := regexp.MustCompile(`the block takes ((?:"[a-z_]+"(?:, )?)+)`)
	adapter := caddyconfig.GetAdapter("caddyfile")
	total := 0
	for block, caddyfile := range blocks {
		_, _, err := adapter.Adapt([]byte(caddyfile), nil)
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
		"mediagw_video_tasks", "mediagw_image_edits", "mediagw_route", "mediagw_simulator", "mediagw_buffered"} {
		if !documented(directive) {
			t.Errorf("no page of docs/ names the directive `%s`", directive)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
