package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const nodeCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider sim {
			base_url http://127.0.0.1:{{sim_port}}/v1
			api_key sim-upstream-key
			models sim-chat sim-embedding
		}
		provider anthropic {
			base_url {{fake_url}}/anthropic/v1
			api_key anthropic-upstream-key
			auth_style x-api-key
			models claude-x
		}
		provider gemini {
			base_url {{fake_url}}/gemini/v1beta
			api_key gemini-upstream-key
			auth_style x-goog-api-key
			models gemini-x
		}
		currency EUR
		price sim-chat {
			input_tokens 0.15
			output_tokens 0.60
		}
		key mg-node-sdk-key {
			account node
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_models /v1/models
		mediagw_route
		@sim vars {mediagw.provider} sim
		reverse_proxy @sim 127.0.0.1:{{sim_port}}
		reverse_proxy {{fake_url}}
	}
}

http://127.0.0.1:{{sim_port}} {
	mediagw_simulator {
		api_key sim-upstream-key
	}
}
`

// fakeProviders stands in for the messages and generateContent upstreams. It answers only a
// request that carries the provider's own key in the provider's header, and records the
// credentials of every request.
type fakeProviders struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // one line of credentials per request
}

func newFakeProviders(t *testing.T) *fakeProviders {
	f := &fakeProviders{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, fmt.Sprintf("%s authorization=%q x-api-key=%q x-goog-api-key=%q query=%q",
			r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("X-Goog-Api-Key"), r.URL.RawQuery))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/anthropic/v1/messages" && r.Header.Get("X-Api-Key") == "anthropic-upstream-key":
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",`+
				`"content":[{"type":"text","text":"hello from the fake messages upstream"}],`+
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":7}}`)
		case r.URL.Path == "/gemini/v1beta/models/gemini-x:generateContent" && r.Header.Get("X-Goog-Api-Key") == "gemini-upstream-key":
			io.WriteString(w, `{"candidates":[{"content":{"role":"model","parts":[{"text":"hello from the fake generateContent upstream"}]},`+
				`"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":6,"totalTokenCount":7},"modelVersion":"gemini-x"}`)
		default:
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"type":"authentication_error","message":"wrong path or upstream key"}}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// TestNodeSDKs runs the official Node SDKs (openai, @anthropic-ai/sdk, @google/genai, versions
// pinned in integration/node/package-lock.json) against the gateway, each with only its base URL
// and key changed: models (with a priced model's `pricing`), chat, streaming chat and embeddings
// through openai; messages with the Anthropic SDK's default x-api-key auth; generateContent with
// x-goog-api-key.
func TestNodeSDKs(t *testing.T) {
	dir := nodeSDKs(t)
	fake := newFakeProviders(t)
	base, _ := startSimGateway(t, nodeCaddyfile, map[string]string{"fake_url": fake.URL})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "sdk_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY="+base, "KEY=mg-node-sdk-key", "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "all ok") {
		t.Fatalf("node sdk_check.mjs: %v\n%s", err, out)
	}
	t.Logf("node sdk_check.mjs:\n%s", out)

	fake.mu.Lock()
	defer fake.mu.Unlock()
	var messages, generate int
	for _, s := range fake.seen {
		if strings.Contains(s, "mg-node-sdk-key") || strings.Contains(s, "mg-wrong") {
			t.Errorf("a caller's key reached the upstream: %s", s)
		}
		switch {
		case strings.HasPrefix(s, "/anthropic/v1/messages ") && strings.Contains(s, `x-api-key="anthropic-upstream-key"`) && strings.Contains(s, `authorization=""`):
			messages++
		case strings.HasPrefix(s, "/gemini/v1beta/models/gemini-x:generateContent ") && strings.Contains(s, `x-goog-api-key="gemini-upstream-key"`) && strings.Contains(s, `authorization=""`):
			generate++
		default:
			t.Errorf("unexpected upstream request: %s", s)
		}
	}
	if messages != 1 || generate != 1 {
		t.Errorf("upstream saw %d messages and %d generateContent requests, want 1 each:\n%s", messages, generate, strings.Join(fake.seen, "\n"))
	}
}

var (
	nodeOnce sync.Once
	nodeDir  string
	nodeErr  error
)

// nodeSDKs installs the pinned SDKs with `npm ci` from the npm registry, once per lock file, into
// the user cache directory, and returns the directory to run node in (with sdk_check.mjs copied
// there). node and npm are required: the test fails, it does not skip, without them.
func nodeSDKs(t *testing.T) string {
	t.Helper()
	dir, err := installNodeSDKs()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// installNodeSDKs does nodeSDKs' work the first time it is called; later calls wait for it.
func installNodeSDKs() (string, error) {
	nodeOnce.Do(func() { nodeDir, nodeErr = installNodeSDKsOnce() })
	return nodeDir, nodeErr
}

func installNodeSDKsOnce() (string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is needed for the Node SDK tests (Node 20 or later): %v", tool, err)
		}
	}
	src := filepath.Join(repoDir(), "integration", "node")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", err
	}
	manifest, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(manifest, lock...))
	dir := filepath.Join(cache, "mediagw", "node-sdks-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		if err := install(dir, manifest, lock, filepath.Join(cache, "mediagw", "npm-cache")); err != nil {
			return "", err
		}
	}
	script, err := os.ReadFile(filepath.Join(src, "sdk_check.mjs"))
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "sdk_check.mjs"), script, 0o644); err != nil {
		return "", err
	}
	return dir, nil
}

// install runs npm ci in a fresh directory and moves it into place, so that a concurrent or
// interrupted install never leaves a half-filled dir behind.
func install(dir string, manifest, lock []byte, npmCache string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".installing-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // gone after the rename; left over only when the install failed
	for name, b := range map[string][]byte{"package.json": manifest, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--cache", npmCache, "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci (installing the Node SDKs from the npm registry): %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); statErr != nil {
			return fmt.Errorf("moving the installed SDKs into place: %v", err)
		}
		// Another test process installed the same lock file first.
	}
	return nil
}
