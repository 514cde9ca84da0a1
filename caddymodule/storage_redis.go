package caddymodule

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
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
// a warning when they could lose an acknowledged task. An acknowledged write survives a failover
// to a replica (Sentinel, Cluster) only with `wait_replicas`: each durable write is then followed
// by a WAIT, and fails (a 5xx answer) when fewer replicas confirm it within `wait_timeout`.
//
// Standalone servers (redis://, rediss:// for TLS, user and password in the URL), Sentinel
// (`?master_set=<name>` with the sentinels' addresses) and Cluster (detected by itself; more seed
// addresses with `?addr=host:port`) are supported and tested against real servers. In a Cluster
// every key of one gateway is in one hash slot (the key prefix is a hash tag), so a Cluster gives
// one gateway availability, not sharding.
//
// Caddyfile:
//
//	storage redis <url> {
//		key_prefix        <prefix>
//		tls_ca            <pem-file>
//		tls_client_cert   <cert-file> <key-file>
//		tls_server_name   <name>
//		sentinel_username <user>
//		sentinel_password <password>
//		wait_replicas     <n>
//		wait_timeout      <duration>
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
	// TLSCAFile is a PEM file of the certificate authorities that signed the server's
	// certificate (a private CA), trusted instead of the system's. Only with rediss://.
	// Default: the system's CAs.
	TLSCAFile string `json:"tls_ca_file,omitempty"`
	// TLSClientCertFile and TLSClientKeyFile are a PEM certificate and key the gateway shows the
	// server, for servers that require client certificates (tls-auth-clients yes). Only with
	// rediss://; both or neither.
	TLSClientCertFile string `json:"tls_client_cert_file,omitempty"`
	TLSClientKeyFile  string `json:"tls_client_key_file,omitempty"`
	// TLSServerName is the name the server's certificate must carry, when it is not the URL's
	// host (for example when the URL names an IP address, or Sentinel or a Cluster answers with
	// addresses the certificate does not name). Default: the URL's host.
	TLSServerName string `json:"tls_server_name,omitempty"`
	// SentinelUsername and SentinelPassword authenticate to the sentinels of a
	// `?master_set=` URL, when they require it; the URL's own user and password are the master's.
	// Write the password as `{env.*}` or `{file.*}`.
	SentinelUsername string `json:"sentinel_username,omitempty"`
	SentinelPassword string `json:"sentinel_password,omitempty"`
	// WaitReplicas makes every write the gateway acknowledges as durable (a task created or
	// finished, an idempotency key, a charge or refund, a queued callback, an item claim, a key
	// or account change) wait until this many replicas have it (Redis WAIT on the write's
	// connection), so that a failover to one of them cannot lose it; a write that fewer replicas
	// confirm within WaitTimeout fails, and the request gets the store-failure answer. Default 0:
	// no wait, and a failover can lose acknowledged writes.
	WaitReplicas int `json:"wait_replicas,omitempty"`
	// WaitTimeout bounds that wait. Default: 1s.
	WaitTimeout caddy.Duration `json:"wait_timeout,omitempty"`

	url              string      // URL with its placeholders expanded
	sentinelUser     string      // SentinelUsername, expanded
	sentinelPassword string      // SentinelPassword, expanded
	tls              *tls.Config // from the TLS files; nil without them
	tlsDigest        string      // SHA-256 of the TLS files' contents
}

// CaddyModule returns the Caddy module information.
func (RedisStorage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "mediagw.storage.redis",
		New: func() caddy.Module { return new(RedisStorage) },
	}
}

// Provision expands the placeholders of the URL and the other settings and reads the TLS files.
func (s *RedisStorage) Provision(caddy.Context) error {
	repl := caddy.NewReplacer()
	s.url = repl.ReplaceKnown(s.URL, "")
	s.sentinelUser = repl.ReplaceKnown(s.SentinelUsername, "")
	s.sentinelPassword = repl.ReplaceKnown(s.SentinelPassword, "")
	for _, v := range []struct{ option, raw, got string }{
		{"the url", s.URL, s.url},
		{"sentinel_username", s.SentinelUsername, s.sentinelUser},
		{"sentinel_password", s.SentinelPassword, s.sentinelPassword},
	} {
		if v.got == "" {
			if _, err := expandRequired(repl, v.option, v.raw); err != nil {
				return fmt.Errorf("storage redis: %w", err)
			}
		}
	}
	var err error
	s.tls, s.tlsDigest, err = s.loadTLS(repl)
	return err
}

// Validate checks the URL's form (without showing its password).
func (s *RedisStorage) Validate() error {
	if s.URL == "" {
		return fmt.Errorf("redis storage: url is required")
	}
	u, err := url.Parse(s.url)
	if err != nil {
		return fmt.Errorf("redis storage: the url cannot be parsed (percent-encode any @ : / ? # in the user name and password)")
	}
	switch u.Scheme {
	case "redis", "rediss", "valkey", "valkeys", "unix":
	default:
		return fmt.Errorf("redis storage: unsupported url scheme %q (use redis://, rediss:// or unix://)", u.Scheme)
	}
	q := u.Query()
	if q.Has("skip_verify") {
		return fmt.Errorf("redis storage: skip_verify turns off the check of the server's certificate; give the CA that signed it with tls_ca instead")
	}
	tlsScheme := u.Scheme == "rediss" || u.Scheme == "valkeys"
	if !tlsScheme && (s.TLSCAFile != "" || s.TLSClientCertFile != "" || s.TLSServerName != "") {
		return fmt.Errorf("redis storage: tls_ca, tls_client_cert and tls_server_name need a rediss:// url")
	}
	if q.Get("master_set") == "" && (s.SentinelUsername != "" || s.SentinelPassword != "") {
		return fmt.Errorf("redis storage: sentinel_username and sentinel_password need a url with ?master_set=<name>")
	}
	if s.WaitReplicas < 0 || s.WaitTimeout < 0 {
		return fmt.Errorf("redis storage: wait_replicas and wait_timeout must not be negative")
	}
	if s.WaitTimeout != 0 && s.WaitReplicas == 0 {
		return fmt.Errorf("redis storage: wait_timeout needs wait_replicas")
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
// whole URL and the other connection settings, so that a changed password, or a replaced CA or
// client certificate, opens a new client on a reload.
func (s *RedisStorage) StoreIdentity() (string, error) {
	h := sha256.New()
	for _, part := range []string{string(identitySalt), s.url, s.TLSCAFile, s.TLSClientCertFile, s.TLSClientKeyFile,
		s.tlsDigest, s.TLSServerName, s.sentinelUser, s.sentinelPassword,
		strconv.Itoa(s.WaitReplicas), time.Duration(s.WaitTimeout).String()} {
		// Each part is followed by its length, so that no two settings give one input. Writes
		// to a hash never fail.
		fmt.Fprintf(h, "%s\x00%d\x00", part, len(part))
	}
	sum := h.Sum(nil)
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
	store, err := storage.OpenRedis(ctx, storage.RedisOptions{
		URL:              s.url,
		KeyPrefix:        s.KeyPrefix,
		Logger:           logger,
		TLS:              s.tls,
		SentinelUsername: s.sentinelUser,
		SentinelPassword: s.sentinelPassword,
		WaitReplicas:     s.WaitReplicas,
		WaitTimeout:      time.Duration(s.WaitTimeout),
	})
	if err != nil {
		return nil, redisOpenHint(err)
	}
	return store, nil
}

// redisOpenHint adds to a failed connection what to do about its usual causes: nothing
// listening at the url's address, or a wrong user or password.
func redisOpenHint(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "no such host"),
		strings.Contains(msg, "i/o timeout"), strings.Contains(msg, "no such file or directory"),
		strings.Contains(msg, "context deadline exceeded"), strings.Contains(msg, "network is unreachable"):
		return fmt.Errorf("%w (no Redis answers there: start redis-server 6.2 or later at that address, or correct the url of `storage redis` in the mediagw global option)", err)
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "NOAUTH"), strings.Contains(msg, "NOPERM"):
		return fmt.Errorf("%w (check the user and password of the url of `storage redis`, and the user's ACL rules; see \"Minimum ACL\" in docs/instances.md)", err)
	}
	return err
}

// UnmarshalCaddyfile sets up the backend from Caddyfile tokens. Syntax:
//
//	storage redis <url> {
//		key_prefix        <prefix>
//		tls_ca            <pem-file>
//		tls_client_cert   <cert-file> <key-file>
//		tls_server_name   <name>
//		sentinel_username <user>
//		sentinel_password <password>
//		wait_replicas     <n>
//		wait_timeout      <duration>
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
	// one reads the single value of a subdirective that may be given once.
	one := func(dst *string) error {
		name := d.Val()
		if *dst != "" {
			return d.Errf("%s given twice", name)
		}
		if !d.NextArg() {
			return d.ArgErr()
		}
		*dst = d.Val()
		if d.NextArg() {
			return d.ArgErr()
		}
		return nil
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "key_prefix":
			err = one(&s.KeyPrefix)
		case "tls_ca":
			err = one(&s.TLSCAFile)
		case "tls_server_name":
			err = one(&s.TLSServerName)
		case "sentinel_username":
			err = one(&s.SentinelUsername)
		case "sentinel_password":
			err = one(&s.SentinelPassword)
		case "wait_replicas":
			var n string
			if s.WaitReplicas != 0 {
				return d.Err("wait_replicas given twice")
			}
			if err = one(&n); err == nil {
				if s.WaitReplicas, err = strconv.Atoi(n); err != nil || s.WaitReplicas < 1 {
					return d.Errf("wait_replicas must be a whole number of replicas, at least 1: %q", n)
				}
			}
		case "wait_timeout":
			var v string
			if s.WaitTimeout != 0 {
				return d.Err("wait_timeout given twice")
			}
			if err = one(&v); err == nil {
				dur, perr := caddy.ParseDuration(v)
				if perr != nil || dur < time.Millisecond {
					return d.Errf("wait_timeout must be a duration of at least 1ms: %q", v)
				}
				s.WaitTimeout = caddy.Duration(dur)
			}
		case "tls_client_cert":
			if s.TLSClientCertFile != "" {
				return d.Err("tls_client_cert given twice")
			}
			args := d.RemainingArgs()
			if len(args) != 2 {
				return d.Err("tls_client_cert needs a certificate file and a key file")
			}
			s.TLSClientCertFile, s.TLSClientKeyFile = args[0], args[1]
		default:
			return unknownSubdirective(d, "storage redis: ", []string{"key_prefix", "tls_ca", "tls_client_cert", "tls_server_name",
				"sentinel_username", "sentinel_password", "wait_replicas", "wait_timeout"})
		}
		if err != nil {
			return err
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
