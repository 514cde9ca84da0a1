package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSDKOptionsWithUnseenCosts runs node/unseen_costs_check.mjs: @google/genai with a response
// field mask in its httpOptions.headers, and openai's chat.completions.create with service_tier
// "priority", through a priced gateway. The provider bills 10 input and 205 output tokens for the
// Gemini call (0.42 at these prices; the mask hides 200 of them) and a premium for the priority
// chat. The gateway refuses both with 400, each SDK's error, before the provider is called: the
// provider never gets the mask or service_tier priority.
func TestSDKOptionsWithUnseenCosts(t *testing.T) {
	dir := nodeSDKs(t)
	fake := newProviderOptionsFake(t)
	base, g := startSimGateway(t, providerOptionsCaddyfile, map[string]string{"fake_url": fake.URL})
	for _, account := range []string{"atk-a", "atk-b"} {
		keysEnv{g: g}.credit(t, account, "10", "sdk-"+account)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "unseen_costs_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY="+base, "NO_PROXY=127.0.0.1", "no_proxy=127.0.0.1")
	out, err := cmd.CombinedOutput()
	t.Logf("node: %s", out)
	if err != nil || !strings.Contains(string(out), "\ndone") {
		t.Fatalf("node: %v", err)
	}
	if !strings.Contains(string(out), "refused chat 400 ") {
		t.Errorf("the chat with service_tier priority was not refused with 400")
	}
	if !strings.Contains(string(out), "refused gemini 400 ") {
		t.Errorf("the Gemini call with a field mask was not refused with 400")
	}
	for _, seen := range fake.received() {
		if strings.Contains(seen.body, `"service_tier":"priority"`) {
			t.Errorf("the provider got service_tier priority, charged as a standard request: %s", seen.body)
		}
		if seen.header.Get("X-Goog-FieldMask") != "" {
			t.Errorf("the provider got a field mask: %s %s", seen.path, seen.header.Get("X-Goog-FieldMask"))
		}
	}
}
