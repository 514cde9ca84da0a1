package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docFiles returns README.md and every markdown file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{filepath.Join("..", "README.md")}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestRelativeLinks checks that every relative link of README.md and docs/**/*.md names a file
// that exists and, with a #fragment into a markdown file, a heading of that file.
func TestRelativeLinks(t *testing.T) {
	files := docFiles(t)
	if len(files) < 8 {
		t.Fatalf("found only %v", files)
	}
	total := 0
	for _, f := range files {
		links, err := relativeLinks(f)
		if err != nil {
			t.Fatal(err)
		}
		total += len(links)
	}
	if total < 50 {
		t.Fatalf("found %d relative links in %v; the link reader is broken", total, files)
	}
	broken, err := brokenLinks(files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// TestBrokenLinksAreFound checks the checker: on files written here, it finds exactly the
// broken links, with GitHub's anchors for headings with code, punctuation and repeats.
func TestBrokenLinksAreFound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("sub/page.md", "# Page\n\n## Global option `mediagw`\n\n## How the instances divide the watcher's work\n\n"+
		"## Waiting for replicas (`wait_replicas`)\n\n## Notes\n\n## Notes\n\n<a id=\"custom\"></a>\n\n```sh\n# not a heading\n```\n")
	write("sub/image.png", "png")
	index := write("index.md", strings.Join([]string{
		"[good](sub/page.md) [good](sub/page.md#global-option-mediagw) ![img](sub/image.png)",
		"[good](sub/page.md#how-the-instances-divide-the-watchers-work) [good](sub/page.md#waiting-for-replicas-wait_replicas)",
		"[good](sub/page.md#notes-1) [good](sub/page.md#custom) [good](#top) [dir](sub/) [web](https://example.com/x.md)",
		"## Top",
		"`[code](missing.md)` is code, and so is this block:",
		"```",
		"[code](missing-too.md)",
		"```",
		"[missing file](sub/nothere.md)",
		"[missing anchor](sub/page.md#not-a-heading) and [text of a code block](sub/page.md#not-a-heading-1)",
		"[missing image](images/none.png) [missing here](#nowhere) [repeat beyond](sub/page.md#notes-2)",
		"[ref]: sub/gone.md",
	}, "\n"))
	broken, err := brokenLinks([]string{index})
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, b := range broken {
		targets = append(targets, strings.Fields(b)[1])
	}
	want := []string{"sub/nothere.md:", "sub/page.md#not-a-heading:", "sub/page.md#not-a-heading-1:",
		"images/none.png:", "#nowhere:", "sub/page.md#notes-2:", "sub/gone.md:"}
	if !slices.Equal(targets, want) {
		t.Errorf("broken links found:\n%s\nwant the links to\n%s", strings.Join(broken, "\n"), strings.Join(want, "\n"))
	}
}

// TestReadmeTestCommandIsCI checks that the test command of the README's "The two commands" is
// the one .ci/run runs, and that the README still gives ./xcaddy.sh run.
func TestReadmeTestCommandIsCI(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join("..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var ciCommand string
	for _, line := range strings.Split(string(ci), "\n") {
		if strings.HasPrefix(line, "go test ") {
			ciCommand = strings.TrimSpace(line)
		}
	}
	if ciCommand == "" {
		t.Fatal(".ci/run runs no go test command")
	}
	_, section, ok := strings.Cut(string(readme), "\n## The two commands\n")
	if !ok {
		t.Fatal(`README.md has no section "The two commands"`)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal(`README.md's "The two commands" has no sh block`)
	}
	var commands []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		command, _, _ := strings.Cut(line, "#")
		commands = append(commands, strings.TrimSpace(command))
	}
	if !slices.Equal(commands, []string{"./xcaddy.sh run", ciCommand}) {
		t.Errorf("README.md's two commands are %q; want ./xcaddy.sh run and .ci/run's %q", commands, ciCommand)
	}
}
