package caddymodule

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
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

// rediss:// to a server that requires client certificates: the CA and the client certificate
// come from the Caddyfile options; without the client certificate the server refuses the
// gateway, and without the CA the gateway refuses the server.
func TestRedisStorageTLSOptions(t *testing.T) {
	certs := testredis.NewTLS(t)
	srv := testredis.Start(t, testredis.Options{TLS: certs, Args: []string{"--tls-auth-clients", "yes"}})
	t.Setenv("MEDIAGW_TEST_TLS_DIR", filepath.Dir(certs.CAFile))
	open := func(block string) (storage.Store, error) {
		t.Helper()
		d := caddyfile.NewTestDispenser("redis " + srv.URL() + " {\n" + block + "\n}")
		s := new(RedisStorage)
		if err := s.UnmarshalCaddyfile(d); err != nil {
			t.Fatalf("%s: %v", block, err)
		}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		defer cancel()
		if err := s.Provision(ctx); err != nil {
			return nil, err
		}
		if err := s.Validate(); err != nil {
			return nil, err
		}
		return s.OpenStore(zap.NewNop())
	}
	store, err := open("key_prefix tls\ntls_ca {env.MEDIAGW_TEST_TLS_DIR}/ca.pem\n" +
		"tls_client_cert " + certs.ClientCertFile + " " + certs.ClientKeyFile + "\ntls_server_name localhost")
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.SettingOnce(context.Background(), "probe", []byte("x")); err != nil {
		t.Fatalf("the store does not work over TLS: %v", err)
	}
	if _, err := open("tls_ca " + certs.CAFile); err == nil {
		t.Fatal("the server accepted a gateway without a client certificate")
	}
	if _, err := open("tls_client_cert " + certs.ClientCertFile + " " + certs.ClientKeyFile); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a server certificate of an unknown CA was accepted: %v", err)
	}
	if _, err := open("tls_ca " + certs.ClientKeyFile); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a CA file without certificates: %v", err)
	}
	if _, err := open("tls_ca " + certs.CAFile + "\ntls_server_name redis.example"); err == nil ||
		!strings.Contains(err.Error(), "redis.example") {
		t.Fatalf("a certificate that does not name tls_server_name was accepted: %v", err)
	}
}

func TestRedisStorageValidateConnectionOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    RedisStorage
		want string
	}{
		{"skip_verify", RedisStorage{URL: "rediss://h:6380?skip_verify=true"}, "tls_ca instead"},
		{"tls on redis://", RedisStorage{URL: "redis://h:6379", TLSServerName: "h"}, "need a rediss:// url"},
		{"cert without key", RedisStorage{URL: "rediss://h:6380", TLSClientCertFile: "c.pem"}, "both its certificate and its key"},
		{"sentinel password without master_set", RedisStorage{URL: "redis://h:26379", SentinelPassword: "x"}, "master_set"},
		{"wait_timeout without wait_replicas", RedisStorage{URL: "redis://h:6379", WaitTimeout: caddy.Duration(time.Second)}, "wait_timeout needs wait_replicas"},
		{"negative wait_replicas", RedisStorage{URL: "redis://h:6379", WaitReplicas: -1}, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			err := tc.s.Provision(ctx)
			if err == nil {
				err = tc.s.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Provision and Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// A reload after the CA file was replaced opens a new client: the identity covers the files'
// contents, not only their names. An unchanged config keeps its identity (and its client).
func TestRedisStorageIdentityFollowsTLSFiles(t *testing.T) {
	one, two := testredis.NewTLS(t), testredis.NewTLS(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	identity := func(caFile string) string {
		t.Helper()
		pem, err := os.ReadFile(caFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ca, pem, 0o600); err != nil {
			t.Fatal(err)
		}
		s := &RedisStorage{URL: "rediss://127.0.0.1:6380", TLSCAFile: ca}
		ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
		defer cancel()
		if err := s.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		id, err := s.StoreIdentity()
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := identity(one.CAFile)
	if again := identity(one.CAFile); again != first {
		t.Fatalf("the same settings give two identities: %q, %q", first, again)
	}
	if replaced := identity(two.CAFile); replaced == first {
		t.Fatal("a replaced CA file keeps the identity")
	}
}

// Through Sentinel: the sentinel's password comes from sentinel_password ({env.*}), the master's
// from the URL; the store reaches the master.
func TestRedisStorageSentinelOptions(t *testing.T) {
	set := testredis.StartSentinel(t, testredis.SentinelSetOptions{MasterName: "gw", Password: "master-pw", SentinelPassword: "sentinel-pw"})
	t.Setenv("MEDIAGW_TEST_SENTINEL_PASSWORD", "sentinel-pw")
	d := caddyfile.NewTestDispenser("redis " + set.URL() + " {\nsentinel_password {env.MEDIAGW_TEST_SENTINEL_PASSWORD}\n}")
	s := new(RedisStorage)
	if err := s.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	if err := s.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	store, err := s.OpenStore(zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.SettingOnce(context.Background(), "probe", []byte("x")); err != nil {
		t.Fatalf("the store does not work through the sentinel: %v", err)
	}
	if got, err := set.Master.Do("EXISTS", "{mediagw}:s:probe").AsInt64(); err != nil || got != 1 {
		t.Fatalf("the master does not hold the setting: %d, %v", got, err)
	}
}
