package caddymodule

import (
	"context"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/internal/testredis"
)

// The URL's password comes from {env.*}, reaches the server, and appears in no identity or
// error.
func TestRedisStorageSecretFromEnv(t *testing.T) {
	srv := testredis.Start(t, testredis.Options{Password: "pw-from-env"})
	t.Setenv("MEDIAGW_TEST_REDIS_PASSWORD", "pw-from-env")
	s := &RedisStorage{URL: "redis://:{env.MEDIAGW_TEST_REDIS_PASSWORD}@" + srv.Addr, KeyPrefix: "envtest"}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := s.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	id, err := s.StoreIdentity()
	if err != nil || strings.Contains(id, "pw-from-env") || !strings.Contains(id, srv.Addr) {
		t.Fatalf("identity %q, %v", id, err)
	}
	store, err := s.OpenStore(zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.SettingOnce(context.Background(), "probe", []byte("x")); err != nil {
		t.Fatalf("the store does not work with the expanded password: %v", err)
	}

	t.Setenv("MEDIAGW_TEST_REDIS_PASSWORD", "wrong-pw")
	bad := &RedisStorage{URL: s.URL}
	if err := bad.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.OpenStore(zap.NewNop()); err == nil || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("wrong password: %v", err)
	}
}

func TestRedisStorageValidate(t *testing.T) {
	for _, tc := range []struct {
		url, prefix, want string
	}{
		{"", "", "url is required"},
		{"http://h:6379", "", "unsupported url scheme"},
		{"redis://h:6379", "a{b}", "key_prefix"},
	} {
		s := &RedisStorage{URL: tc.url, KeyPrefix: tc.prefix}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		if err := s.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("Validate(%q, %q) = %v, want %q", tc.url, tc.prefix, err, tc.want)
		}
	}
}
