package docs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNodeVersionIsWhatTheSDKsDeclare checks that the Node version README.md and
// docs/development.md ask for, and the engines of integration/node/package.json, is the
// lowest major release that every package pinned in integration/node/package-lock.json
// declares it runs on, so that a new SDK pin that needs a newer Node cannot leave the docs
// behind.
func TestNodeVersionIsWhatTheSDKsDeclare(t *testing.T) {
	node := filepath.Join("..", "integration", "node")
	need := nodeMajorNeeded(t, filepath.Join(node, "package-lock.json"))
	if need < 20 {
		t.Fatalf("the pinned SDKs need Node %d: the lock file was not read as expected", need)
	}
	want := "Node " + strconv.Itoa(need) + " or later"
	for _, doc := range []string{filepath.Join("..", "README.md"), "development.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if text := strings.Join(strings.Fields(string(b)), " "); !strings.Contains(text, want) {
			t.Errorf("%s does not say %q, the Node that the pinned SDKs declare", doc, want)
		}
	}
	var manifest struct {
		Engines struct{ Node string } `json:"engines"`
	}
	readJSON(t, filepath.Join(node, "package.json"), &manifest)
	if got, wantEngines := manifest.Engines.Node, ">="+strconv.Itoa(need); got != wantEngines {
		t.Errorf("integration/node/package.json engines.node is %q, want %q", got, wantEngines)
	}
}

// TestNodeMajorNeeded checks the reading of engines ranges on a lock file written here.
func TestNodeMajorNeeded(t *testing.T) {
	lock := `{"packages": {
		"": {"engines": {"node": ">=18"}},
		"node_modules/a": {"engines": {"node": "^12.20 || >= 14.13"}},
		"node_modules/b": {"engines": {"node": ">=22.0.0"}},
		"node_modules/c": {"engines": {"node": "*"}},
		"node_modules/d": {}
	}}`
	path := filepath.Join(t.TempDir(), "package-lock.json")
	if err := os.WriteFile(path, []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := nodeMajorNeeded(t, path); got != 22 {
		t.Errorf("nodeMajorNeeded = %d, want 22 (package b)", got)
	}
}

// nodeMajorNeeded returns the lowest Node major release that the engines.node range of every
// dependency in the lock file admits (the root package's own range is not counted). A range
// of alternatives (a || b) admits the lowest of their first versions.
func nodeMajorNeeded(t *testing.T, lockPath string) int {
	t.Helper()
	var lock struct {
		Packages map[string]struct {
			Engines struct{ Node string } `json:"engines"`
		} `json:"packages"`
	}
	readJSON(t, lockPath, &lock)
	first := regexp.MustCompile(`\d+`)
	need := 0
	for name, pkg := range lock.Packages {
		if name == "" || pkg.Engines.Node == "" {
			continue
		}
		lowest := -1
		for _, alt := range strings.Split(pkg.Engines.Node, "||") {
			major := 0 // "*", "x" or a range with no number admits any Node
			if m := first.FindString(alt); m != "" {
				n, err := strconv.Atoi(m)
				if err != nil {
					t.Fatalf("%s: %s: engines.node %q: %v", lockPath, name, pkg.Engines.Node, err)
				}
				major = n
			}
			if lowest < 0 || major < lowest {
				lowest = major
			}
		}
		need = max(need, lowest)
	}
	return need
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
