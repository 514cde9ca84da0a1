package caddymodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

func TestExpandSecretDefaults(t *testing.T) {
	t.Setenv("MG_TEST_SET", "from-env")
	t.Setenv("MG_TEST_EMPTY", "")
	t.Setenv("MG_TEST_BRACES", "{env.MG_TEST_SET}")
	repl := caddy.NewReplacer()
	for in, want := range map[string]string{
		"{env.MG_TEST_SET:fallback}":                "from-env",
		"{env.MG_TEST_UNSET:mg-demo-key}":           "mg-demo-key",
		"{env.MG_TEST_EMPTY:mg-demo-key}":           "mg-demo-key",
		"{env.MG_TEST_SET}":                         "from-env",
		"{env.MG_TEST_UNSET}":                       "",
		"a-{env.MG_TEST_UNSET:b}-{env.MG_TEST_SET}": "a-b-from-env",
		"{env.MG_TEST_BRACES:x}":                    "{env.MG_TEST_SET}", // values are not expanded twice
		"literal-secret":                            "literal-secret",
		"{env.MG_TEST_UNSET:}":                      "",
	} {
		if got := expandSecret(repl, in); got != want {
			t.Errorf("expandSecret(%q) = %q, want %q", in, got, want)
		}
	}
}

// A placeholder without a default that comes out empty is refused with the variable's name (or
// the file's) and what to do; a value left empty on purpose, or set, is not.
func TestExpandRequiredNamesTheUnsetVariable(t *testing.T) {
	t.Setenv("MG_TEST_SET", "from-env")
	t.Setenv("MG_TEST_EMPTY", "")
	dir := t.TempDir()
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repl := caddy.NewReplacer()
	for _, tc := range []struct{ raw, want, wantErr string }{
		{raw: "{env.MG_TEST_SET}", want: "from-env"},
		{raw: "{env.MG_TEST_UNSET:}", want: ""},
		{raw: "", want: ""},
		{raw: "{env.MG_TEST_UNSET:fallback}", want: "fallback"},
		{raw: "{env.MG_TEST_UNSET}", wantErr: "api_key is empty: {env.MG_TEST_UNSET}: the environment variable MG_TEST_UNSET is not set where caddy runs: set it (export MG_TEST_UNSET=…) before starting caddy, or write {env.MG_TEST_UNSET:<default>}"},
		{raw: "{env.MG_TEST_EMPTY}", wantErr: "the environment variable MG_TEST_EMPTY is empty where caddy runs"},
		{raw: "{file." + filepath.Join(dir, "missing") + "}", wantErr: "the file cannot be read: open " + filepath.Join(dir, "missing")},
		{raw: "{file." + emptyFile + "}", wantErr: "the file " + emptyFile + " is empty"},
	} {
		got, err := expandRequired(repl, "api_key", tc.raw)
		switch {
		case tc.wantErr == "" && (err != nil || got != tc.want):
			t.Errorf("expandRequired(%q) = %q, %v; want %q", tc.raw, got, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("expandRequired(%q) error = %v; want it to contain %q", tc.raw, err, tc.wantErr)
		}
	}
}
