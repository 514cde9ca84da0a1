package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// docSnippet is a go, js or sh block of a documentation file and the text block that follows
// it: what the documentation says it prints, `…` standing for anything.
type docSnippet struct {
	file, lang, code, prints string
	line                     int
}

// docSnippets reads the examples of the documentation file at rel (relative to the repository):
// its go and js blocks, each with the text block after it, and its sh blocks that a text block
// follows (an sh block without one, such as the README's two commands, is not an example).
func docSnippets(t *testing.T, rel string) []docSnippet {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoDir(), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	type block struct {
		lang, text string
		line       int
	}
	var blocks []block
	var cur *block
	for i, line := range strings.Split(string(doc), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{lang: strings.TrimPrefix(line, "```"), line: i + 1}
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	var out []docSnippet
	for i, b := range blocks {
		printed := i+1 < len(blocks) && blocks[i+1].lang == "text"
		switch {
		case b.lang == "sh" && !printed, b.lang != "go" && b.lang != "js" && b.lang != "sh":
			continue
		case !printed:
			t.Fatalf("%s:%d: a %s block without the text block of what it prints after it", rel, b.line, b.lang)
		}
		out = append(out, docSnippet{file: rel, lang: b.lang, code: b.text, prints: blocks[i+1].text, line: b.line})
	}
	return out
}

// runDocSnippets runs every example of the README's walk-through and every SDK example of
// docs/api.md against the demo gateway at base (the examples name http://127.0.0.1:8080) and
// checks that each prints what the documentation says. Go examples are built in the
// repository's module, so they use the SDK versions of go.mod; js examples run with the pinned
// Node SDKs of integration/node; sh examples run with bash, stopping at the first failing
// command.
func runDocSnippets(t *testing.T, base string) {
	readme, api := docSnippets(t, "README.md"), docSnippets(t, "docs/api.md")
	if len(api) < 4 {
		t.Fatalf("docs/api.md has %d SDK examples; want the four of the quick start", len(api))
	}
	if !slices.ContainsFunc(readme, func(s docSnippet) bool { return s.lang == "sh" }) ||
		!slices.ContainsFunc(readme, func(s docSnippet) bool { return s.lang != "sh" }) {
		t.Fatalf("README.md has %d examples; want the walk-through's commands and its SDK call", len(readme))
	}
	snippets := append(readme, api...)
	checkDocSDKVersions(t)
	nodeDir := nodeSDKs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i, sn := range snippets {
		code := strings.ReplaceAll(sn.code, "http://127.0.0.1:8080", base)
		var cmd *exec.Cmd
		switch sn.lang {
		case "go":
			// A dot directory is outside ./... patterns, so a run that is killed leaves nothing
			// that go vet or go test would pick up.
			dir, err := os.MkdirTemp(filepath.Join(repoDir(), "integration"), ".docsnippet-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd = exec.CommandContext(ctx, "go", "run", "./integration/"+filepath.Base(dir))
			cmd.Dir = repoDir()
			cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
		case "js":
			file := filepath.Join(nodeDir, fmt.Sprintf("docsnippet-%d-%d.mjs", os.Getpid(), i))
			if err := os.WriteFile(file, []byte(code), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Remove(file) })
			cmd = exec.CommandContext(ctx, "node", filepath.Base(file))
			cmd.Dir = nodeDir
			cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
		case "sh":
			cmd = exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", code)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
		}
		want := regexp.MustCompile(`(?s)\A` + strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSpace(sn.prints)), "…", ".*") + `\z`)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("%s:%d (%s): %v\n%s%s", sn.file, sn.line, sn.lang, err, stdout.String(), stderr.String())
				return
			}
			if got := strings.TrimSpace(stdout.String()); !want.MatchString(got) {
				t.Errorf("%s:%d (%s) printed\n%s\nwant what the documentation says:\n%s", sn.file, sn.line, sn.lang, got, sn.prints)
			}
		}()
	}
	wg.Wait()
}

// checkDocSDKVersions checks that the SDK versions docs/api.md says its examples are tested with
// are those of go.mod and integration/node/package.json.
func checkDocSDKVersions(t *testing.T) {
	t.Helper()
	read := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{repoDir()}, parts...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc, gomod, pkg := read("docs", "api.md"), read("go.mod"), read("integration", "node", "package.json")
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal([]byte(pkg), &manifest); err != nil || len(manifest.Dependencies) == 0 {
		t.Fatalf("integration/node/package.json: %v", err)
	}
	want := map[string]string{}
	for name, version := range manifest.Dependencies {
		want[name] = version
	}
	for _, mod := range []string{"github.com/volcengine/volcengine-go-sdk", "github.com/openai/openai-go/v3"} {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` (v\S+)`).FindStringSubmatch(gomod)
		if m == nil {
			t.Fatalf("go.mod does not require %s", mod)
		}
		want[mod] = m[1]
	}
	for name, version := range want {
		if !strings.Contains(doc, "`"+name+"` "+version) {
			t.Errorf("docs/api.md does not say its examples are tested with `%s` %s", name, version)
		}
	}
}
