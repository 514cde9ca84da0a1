package caddymodule

import (
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
