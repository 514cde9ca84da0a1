package console

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
)

// TestPricesPage shows every model's price to an operator, and to a member only the models one
// of their account's usable keys allows (a revoked key's models are not among them).
func TestPricesPage(t *testing.T) {
	c := newTestConsole(t, 4)
	table, err := billing.NewTable("EUR", []billing.Price{
		{Model: "video-pro", Second: 50_000, SecondBands: map[string]billing.Money{"1080p": 120_000}},
		{Model: "chat-large", InputTokens: 2_500_000, OutputTokens: 10_000_000},
		{Model: "secret-model", Request: 1_000_000},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.h.Prices = table
	c.h.Models = func() []string { return []string{"video-pro", "chat-large", "secret-model", "free-model"} }
	ctx := context.Background()
	if _, err := c.h.Keys.CreateKey(ctx, []byte(`{"account":"acme","models":["video-*"]}`)); err != nil {
		t.Fatal(err)
	}
	revoked, err := c.h.Keys.CreateKey(ctx, []byte(`{"account":"acme","models":["secret-*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.h.Keys.RevokeKey(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.h.Keys.CreateKey(ctx, []byte(`{"account":"beta","models":["chat-*"]}`)); err != nil {
		t.Fatal(err)
	}

	resp, page := c.request(http.MethodGet, "/prices", c.login("admin"), nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("operator: %d %s", resp.StatusCode, page)
	}
	for _, want := range []string{"EUR", "video-pro", "per second of video at 1080p</td><td>0.12", "per second of video</td><td>0.05",
		"chat-large", "per million output tokens</td><td>10", "secret-model", "per request</td><td>1", "free-model", "free"} {
		if !strings.Contains(page, want) {
			t.Errorf("operator's prices page lacks %q", want)
		}
	}

	resp, page = c.request(http.MethodGet, "/prices", c.login("alice"), nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("member: %d %s", resp.StatusCode, page)
	}
	if !strings.Contains(page, "video-pro") {
		t.Error("the member's prices page lacks the model their key allows")
	}
	for _, hidden := range []string{"chat-large", "secret-model", "free-model"} {
		if strings.Contains(page, hidden) {
			t.Errorf("the member's prices page shows %s, which no usable key of acme allows", hidden)
		}
	}
}
