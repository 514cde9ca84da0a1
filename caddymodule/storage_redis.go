package caddymodule

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/mediagw/mediagw/storage"
)

func init() {
	caddy.RegisterModule(RedisStorage{})
}

// RedisStorage keeps the state in Redis (or Valkey) (module mediagw.storage.redis), so that
// several gateway instances behind a load balancer behave as one gateway: they share task
// ownership, quotas, rate windows, active-task limits, idempotency records, usage counters, the
// presign limit, the webhook secret, the callback outbox, the watcher's work and key revocations.
//
// Key and account lookups are served from a client-side cache that the server invalidates, so
// they cost no round trip; a key revoked through one instance is refused by every instance
// within a second. Quotas, rate windows, leases and task updates are Lua scripts that the server
// runs atomically.
//
// An acknowledged task survives a restart of the server only when it runs with
// `appendonly yes` and `appendfsync always`; the gateway reads these settings on start and logs
// a warning when they could lose an acknowledged task.
//
// Standalone servers (redis://, rediss:// for TLS, user and password in the URL), Sentinel
// (`?master_set=<name>` with the sentinels' addresses) and Cluster (detected by itself; more seed
// addresses with `&addr=host:port`) are supported by the client (github.com/redis/rueidis).
//
// Caddyfile:
//
//	storage redis <url> {
//		key_prefix <prefix>
//	}
type RedisStorage struct {
	// URL of the server, for example `redis://:{env.REDIS_PASSWORD}@10.0.0.5:6379/0` or
	// `rediss://user:{env.REDIS_PASSWORD}@redis.internal:6380`. Placeholders ({env.*},
	// {file.*}) are expanded when the config loads, so a password never lands in the JSON config.
	// Required.
	URL string `json:"url,omitempty"`
	// KeyPrefix starts every key this gateway writes, so that several gateways (or other
	// programs) share one Redis without seeing each other's state. Every instance of one gateway
	// must use the same prefix. Default: `mediagw`.
	KeyPrefix string `json:"key_prefix,omitempty"`

	url string // URL with its placeholders expanded
}

// CaddyModule returns the Caddy module information.
func (RedisStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "mediagw.storage.redis",
		New: func() caddy.Module { return new(RedisStorage) },
	}
}

// Provision expands the URL's placeholders.
func (s *RedisStorage) Provision(caddy.Context) error {
	repl := caddy.NewReplacer()
	s.url = repl.ReplaceKnown(s.URL, "")
	return nil
}

// Validate checks the URL's form (without showing its password).
func (s *RedisStorage) Validate() error {
	if s.URL == "" {
		return fmt.Errorf("redis storage: url is required")
	}
	u, err := url.Parse(s.url)
	if err != nil {
		return fmt.Errorf("redis storage: the url %s cannot be parsed", storage.RedactURL(s.url))
	}
	switch u.Scheme {
	case "redis", "rediss", "valkey", "valkeys", "unix":
	default:
		return fmt.Errorf("redis storage: unsupported url scheme %q (use redis://, rediss:// or unix://)", u.Scheme)
	}
	if strings.ContainsAny(s.KeyPrefix, "{} \t\n") {
		return fmt.Errorf("redis storage: key_prefix must not contain braces or white space")
	}
	return nil
}

// identitySalt makes store identities useless outside this process: an identity may be logged,
// and must not reveal a password even as a plain hash.
var identitySalt = func() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics where no randomness exists)
	return b
}()

// StoreIdentity is the server (without its password), the key prefix, and a salted hash of the
// whole URL, so that a changed password opens a new client.
func (s *RedisStorage) StoreIdentity() (string, error) {
	sum := sha256.Sum256(append(append([]byte{}, identitySalt...), s.url...))
	prefix := s.KeyPrefix
	if prefix == "" {
		prefix = storage.DefaultRedisKeyPrefix
	}
	return "redis:" + storage.RedactURL(s.url) + "#" + prefix + "#" + hex.EncodeToString(sum[:8]), nil
}

// redisConnectTimeout bounds the first connection and the persistence check.
const redisConnectTimeout = 10 * time.Second

// OpenStore connects to the server and checks its persistence settings.
func (s *RedisStorage) OpenStore(logger *zap.Logger) (storage.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), redisConnectTimeout)
	defer cancel()
	return storage.OpenRedis(ctx, storage.RedisOptions{URL: s.url, KeyPrefix: s.KeyPrefix, Logger: logger})
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens. Syntax:
//
//	storage redis <url> {
//		key_prefix <prefix>
//	}
func (s *RedisStorage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the backend name
	if !d.NextArg() {
		return d.ArgErr()
	}
	s.URL = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "key_prefix":
			if s.KeyPrefix != "" {
				return d.Err("key_prefix given twice")
			}
			if !d.NextArg() {
				return d.ArgErr()
			}
			s.KeyPrefix = d.Val()
			if d.NextArg() {
				return d.ArgErr()
			}
		default:
			return d.Errf("unknown storage redis option %q", d.Val())
		}
	}
	return nil
}

// Interface guards
var (
	_ StoreBackend          = (*RedisStorage)(nil)
	_ caddy.Provisioner     = (*RedisStorage)(nil)
	_ caddy.Validator       = (*RedisStorage)(nil)
	_ caddyfile.Unmarshaler = (*RedisStorage)(nil)
)
