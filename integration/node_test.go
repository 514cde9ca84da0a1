package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
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
	log usage {
		output mediagw_buffered {
			flush_interval 50ms
			output file {{usage_log}} {
				roll_disabled
			}
		}
		format json
		include mediagw.usage
	}
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
			models claude-x claude-priced
		}
		provider gemini {
			base_url {{fake_url}}/gemini/v1beta
			api_key gemini-upstream-key
			auth_style x-goog-api-key
			models gemini-x gemini-priced
		}
		currency EUR
		price sim-chat {
			input_tokens 0.15
			output_tokens 0.60
		}
		price claude-priced {
			request 1
		}
		price gemini-priced {
			request 1
		}
		key mg-node-broke-key {
			account node-broke
			budget 0.5
		}
		key mg-node-sdk-key {
			account node
		}
		key mg-node-narrow-key {
			account node-narrow
			models gemini-* sim-*
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		@models path /v1/models /v1/models/*
		mediagw_models @models
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

// fakeProviders stands in for the messages and generate-content upstreams. It answers only a
// request that carries the provider's own key in the provider's header, and records the path and
// credentials of every request.
type fakeProviders struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // one line of credentials per request
}

func newFakeProviders(t *testing.T) *fakeProviders {
	f := &fakeProviders{}
	gemini := geminiFake{base: "/gemini/v1beta", model: "gemini-x", key: "gemini-upstream-key"}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.seen = append(f.seen, fmt.Sprintf("%s authorization=%q x-api-key=%q x-goog-api-key=%q query=%q",
			r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("X-Goog-Api-Key"), r.URL.RawQuery))
		f.mu.Unlock()
		if gemini.handles(r) {
			gemini.serve(w, r, body)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/anthropic/v1/messages" && r.Header.Get("X-Api-Key") == "anthropic-upstream-key" {
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",`+
				`"content":[{"type":"text","text":"hello from the fake messages upstream"}],`+
				`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":7}}`)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"type":"authentication_error","message":"wrong path or upstream key"}}`)
	}))
	t.Cleanup(f.Close)
	return f
}

// upstreamCalls counts the requests the fake saw by path, and fails the test for any that
// carried a caller's key or lacked the provider's own.
func (f *fakeProviders) upstreamCalls(t *testing.T) map[string]int {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := map[string]int{}
	for _, s := range f.seen {
		path, creds, _ := strings.Cut(s, " ")
		if strings.Contains(s, "mg-node") || strings.Contains(s, "mg-wrong") {
			t.Errorf("a caller's key reached the upstream: %s", s)
		}
		switch {
		case strings.HasPrefix(path, "/anthropic/") && strings.Contains(creds, `x-api-key="anthropic-upstream-key"`) && strings.Contains(creds, `authorization=""`):
		case strings.HasPrefix(path, "/gemini/") && strings.Contains(creds, `x-goog-api-key="gemini-upstream-key"`) && strings.Contains(creds, `authorization=""`):
		default:
			t.Errorf("upstream request without the provider's own key: %s", s)
		}
		calls[path]++
	}
	return calls
}

// TestNodeSDKs runs the official Node SDKs (openai, @anthropic-ai/sdk, @google/genai, the newest
// versions, pinned in integration/node/package-lock.json) against the gateway, each with only
// its base URL and key changed: models (list with a priced model's `pricing`, and retrieve, a model outside the key's list being
// 404 as an unknown one), chat, streaming chat and embeddings through openai; messages with the
// Anthropic SDK's default x-api-key auth; generateContent, its stream, countTokens and
// embedContent with x-goog-api-key, which @google/genai 3 sends to /v1/models/{model}:… The
// generate-content upstream gets the provider's key and never the caller's, and the usage log
// counts the tokens of the answer.
func TestNodeSDKs(t *testing.T) {
	runNodeGenAI(t, nodeSDKs(t), "sdk_check.mjs", "v1", map[string]int{"/anthropic/v1/messages": 1})
}

// TestNodeGenAIv2SDK runs the generate-content checks with @google/genai 2 (pinned in
// integration/node/genai-v2), which sends them to /v1beta/models/{model}:…, where version 3
// sends them to /v1: both must keep working.
func TestNodeGenAIv2SDK(t *testing.T) {
	runNodeGenAI(t, nodeSDKsIn(t, nodeGenAIv2), "genai_check.mjs", "v1beta", map[string]int{})
}

// runNodeGenAI runs script in the install dir against a gateway in front of the fakes, with
// @google/genai sending to apiVersion, and checks what reached the upstreams: other's calls and
// one of each generate-content method at the provider's own base path.
func runNodeGenAI(t *testing.T, dir, script, apiVersion string, other map[string]int) {
	fake := newFakeProviders(t)
	usageLog := filepath.Join(t.TempDir(), "usage.log")
	base, _ := startSimGateway(t, nodeCaddyfile, map[string]string{"fake_url": fake.URL, "usage_log": usageLog})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY="+base, "KEY=mg-node-sdk-key", "NARROW_KEY=mg-node-narrow-key", "BROKE_KEY=mg-node-broke-key",
		"GENAI_API_VERSION="+apiVersion, "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "all ok") {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	t.Logf("node %s:\n%s", script, out)

	want := map[string]int{}
	for path, n := range other {
		want[path] = n
	}
	for _, method := range []string{"generateContent", "streamGenerateContent", "countTokens", "batchEmbedContents"} {
		want["/gemini/v1beta/models/gemini-x:"+method] = 1
	}
	if got := fake.upstreamCalls(t); !maps.Equal(got, want) {
		t.Errorf("upstream calls %v, want %v", got, want)
	}
	endpoint := "/" + apiVersion + "/models/{model}:generateContent"
	waitFor(t, "the usage record of generateContent", func() bool {
		for _, rec := range readUsageLog(t, usageLog, "node-narrow") {
			if rec.Endpoint == endpoint && rec.Model == "gemini-x" && rec.Provider == "gemini" &&
				rec.PromptTokens != nil && *rec.PromptTokens == 1 && rec.TotalTokens != nil && *rec.TotalTokens == 7 {
				return true
			}
		}
		return false
	})
}

// The Node SDK installs, directories of integration/ that hold a package.json and its
// package-lock.json: the newest pins, and the last @google/genai before version 3, which sends
// generate-content calls to /v1beta where version 3 sends them to /v1.
const (
	nodeNewest  = "node"
	nodeGenAIv2 = "node/genai-v2"
	nodeScripts = "node" // every *.mjs here is copied into each install
)

var (
	nodeMu       sync.Mutex
	nodeInstalls = map[string]*nodeInstall{}
)

// nodeInstall is one install's result, made once per test process.
type nodeInstall struct {
	once sync.Once
	dir  string
	err  error
}

// nodeSDKs installs the newest pinned SDKs (see nodeSDKsIn) and returns their directory.
func nodeSDKs(t *testing.T) string {
	t.Helper()
	return nodeSDKsIn(t, nodeNewest)
}

// nodeSDKsIn installs the SDKs pinned in integration/<rel> with `npm ci` from the npm registry,
// once per lock file, into the user cache directory, and returns the directory to run node in
// (with the scripts of integration/node copied there). node and npm are required: the test
// fails, it does not skip, without them.
func nodeSDKsIn(t *testing.T, rel string) string {
	t.Helper()
	dir, err := installNodeSDKsFrom(rel)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// installNodeSDKs installs every pinned set; prepareTools starts it early.
func installNodeSDKs() (string, error) {
	if _, err := installNodeSDKsFrom(nodeGenAIv2); err != nil {
		return "", err
	}
	return installNodeSDKsFrom(nodeNewest)
}

// installNodeSDKsFrom does nodeSDKsIn's work the first time it is called for rel; later calls
// wait for it.
func installNodeSDKsFrom(rel string) (string, error) {
	nodeMu.Lock()
	in, ok := nodeInstalls[rel]
	if !ok {
		in = &nodeInstall{}
		nodeInstalls[rel] = in
	}
	nodeMu.Unlock()
	in.once.Do(func() { in.dir, in.err = installNodeSDKsOnce(rel) })
	return in.dir, in.err
}

func installNodeSDKsOnce(rel string) (string, error) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("%s is needed for the Node SDK tests (Node 22 or later): %v", tool, err)
		}
	}
	src := filepath.Join(repoDir(), "integration", filepath.FromSlash(rel))
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
	scripts, err := filepath.Glob(filepath.Join(repoDir(), "integration", nodeScripts, "*.mjs"))
	if err != nil {
		return "", err
	}
	for _, path := range scripts {
		script, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), script, 0o644); err != nil {
			return "", err
		}
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
