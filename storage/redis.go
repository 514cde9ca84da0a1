package storage

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/zap"
)

// DefaultRedisKeyPrefix is the key prefix of the Redis store when none is configured.
const DefaultRedisKeyPrefix = "mediagw"

// RedisOptions configure the Redis store.
type RedisOptions struct {
	// URL of the server: redis://[user:password@]host:port[/db], rediss:// for TLS, with
	// ?addr=host:port for more seed addresses (a Cluster is detected by itself) and
	// ?master_set=name to go through Sentinel (the addresses are then the sentinels').
	URL string
	// KeyPrefix starts every key, so that several gateways (or other programs) can share one
	// Redis. It is wrapped in a hash tag ({prefix}) so that in a Cluster every key of one
	// gateway lives in one slot, as the atomic scripts need. Default: DefaultRedisKeyPrefix.
	KeyPrefix string
	// Logger receives the persistence warning and cache notes.
	Logger *zap.Logger
	// CacheSize bounds the client-side cache of key and account records, per connection, in
	// bytes. Default: 16 MiB.
	CacheSize int
	// TLS configures the connections of a rediss:// URL (to the sentinels too): the CAs to
	// trust, a client certificate, the server name. Its ServerName defaults to the URL's host.
	// Nil: the system's CAs. It is an error with a redis:// URL.
	TLS *tls.Config
	// SentinelUsername and SentinelPassword authenticate to the sentinels of a ?master_set= URL;
	// the URL's own user and password are the master's (and its replicas').
	SentinelUsername, SentinelPassword string
	// WaitReplicas, when above 0, makes every write the gateway acknowledges as durable (a task
	// created or changed, an idempotency key taken or answered, a counter charged or refunded, a
	// callback queued, an item claimed, a key or account changed, a setting) wait until that many
	// replicas have it: `WAIT n timeout` follows the write on its connection, and a write that
	// fewer replicas confirm within WaitTimeout fails with ErrNotReplicated (and is taken back
	// where it can be). Leases, rate windows, heartbeats and reservations do not wait. Default 0:
	// a write is acknowledged when the master has applied it, and a failover can lose it.
	WaitReplicas int
	// WaitTimeout bounds the wait of a durable write for its replicas (rounded down to whole
	// milliseconds, at least 1). Default: DefaultRedisWaitTimeout.
	WaitTimeout time.Duration
}

// RedisACLCommands are the commands the store runs, directly or from its scripts, in the form
// of ACL SETUSER rules: the least an ACL user of the gateway needs, besides the pattern of its
// keys (~{<key_prefix>}:*). A Cluster also needs +cluster|slots (which the client asks below
// Redis 8) and +cluster|shards (from Redis 8 on). The tests run
// the conformance suite as a user with exactly these rules, so a new command fails them until it
// is added here.
//
// `+wait` is used only with RedisOptions.WaitReplicas; `+role` lets the gateway check on start
// whether the server has replicas.
//
// `+config|get` is not among them: it lets the gateway check the persistence settings on start,
// but also read every other setting, passwords included. Without it the gateway logs a warning
// that it could not check them.
const RedisACLCommands = "+hello +auth +ping +select +client|setname +client|tracking +client|caching " +
	"+multi +exec +pttl +evalsha +eval +exists +get +set +incr +incrby +del +type " +
	"+hget +hmget +hset +hdel +sadd +srem +smembers +sscan " +
	"+zadd +zrem +zcard +zrange +zrangebyscore +zrevrangebyscore +zremrangebyscore " +
	"+pexpire +pexpireat +wait +role"

// redisWaitConnections bounds the connections on which durable writes wait for their replicas at
// once; more writes wait for one of them.
const redisWaitConnections = 64

// redisDialTimeout bounds each connection attempt, to a sentinel too.
const redisDialTimeout = 5 * time.Second

// sentinelRefresh is how often the client asks the sentinels who the master is, besides
// following their +switch-master messages (one missed message must not pin the old master).
const sentinelRefresh = 5 * time.Second

// Redis is the Store for several gateway processes sharing one Redis (or Valkey) server: task
// ownership, quotas, rate windows, active-task counters, idempotency records, the callback
// outbox, leases and key revocations are all kept there, and every state change is one Lua script
// run atomically by the server.
//
// Per-request lookups of key and account records (KeyByHash, Account, DirectoryVersion) are
// served from a client-side cache that the server invalidates (RESP3 client tracking), so they
// cost no network round trip. A cached record is also kept at most MaxDirectoryStaleness, and a
// record changed through this Store is read past the cache for a while, so that the process that
// revokes a key refuses it from the next request on. Lookups of unknown keys are cached too
// (the server then invalidates them when such a key is created); the cache is bounded per
// connection (RedisOptions.CacheSize) and evicts the least recently used records.
//
// Writes are acknowledged when the server has applied them. They survive a restart of the
// server only when it runs with `appendonly yes` and `appendfsync always`; OpenRedis checks that
// and logs a warning otherwise. They survive a failover to a replica only with
// RedisOptions.WaitReplicas (see execDurable).
type Redis struct {
	client rueidis.Client
	prefix string
	logger *zap.Logger
	// written holds, per cache key, until when this process reads it past the cache because it
	// changed it (the server's invalidation may arrive after the write's reply).
	written sync.Map // string -> int64 (Unix nanoseconds)
	now     func() time.Time
	// waitReplicas and waitTimeout are RedisOptions.WaitReplicas and WaitTimeout.
	waitReplicas int64
	waitTimeout  time.Duration
}

// OpenRedis connects to the server and checks its persistence settings.
func OpenRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	opt, err := rueidis.ParseURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("redis store: invalid URL: %s", redactURLError(err, o.URL))
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 16 << 20
	}
	if o.WaitReplicas < 0 || o.WaitTimeout < 0 {
		return nil, fmt.Errorf("redis store: wait_replicas and wait_timeout must not be negative")
	}
	if o.WaitTimeout == 0 {
		o.WaitTimeout = DefaultRedisWaitTimeout
	}
	// WAIT's timeout is in milliseconds, and 0 would wait for ever.
	o.WaitTimeout = max(o.WaitTimeout.Truncate(time.Millisecond), time.Millisecond)
	if o.TLS != nil {
		if opt.TLSConfig == nil {
			return nil, fmt.Errorf("redis store: TLS settings need a rediss:// URL, not %s", RedactURL(o.URL))
		}
		tlsConfig := o.TLS.Clone()
		if tlsConfig.ServerName == "" {
			tlsConfig.ServerName = opt.TLSConfig.ServerName
		}
		tlsConfig.MinVersion = max(tlsConfig.MinVersion, tls.VersionTLS12)
		tlsConfig.InsecureSkipVerify = tlsConfig.InsecureSkipVerify || opt.TLSConfig.InsecureSkipVerify
		opt.TLSConfig = tlsConfig
	}
	if opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = redisDialTimeout
	}
	if opt.Sentinel.MasterSet != "" {
		// The sentinels are reached as the master is: same dialer and TLS, their own
		// credentials.
		opt.Sentinel.Dialer = opt.Dialer
		opt.Sentinel.TLSConfig = opt.TLSConfig
		opt.Sentinel.Username, opt.Sentinel.Password = o.SentinelUsername, o.SentinelPassword
		opt.Sentinel.ClientName = "mediagw"
		opt.Sentinel.TopologyRefreshInterval = sentinelRefresh
	} else if o.SentinelUsername != "" || o.SentinelPassword != "" {
		return nil, fmt.Errorf("redis store: sentinel credentials need a URL with ?master_set=<name>")
	}
	opt.CacheSizeEachConn = o.CacheSize
	if o.WaitReplicas > 0 && opt.BlockingPoolSize == 0 {
		// Each durable write holds a connection of the blocking pool while its WAIT blocks
		// (about 1 MiB of buffers each); the pool is bounded, and shrinks when writes calm down.
		opt.BlockingPoolSize = redisWaitConnections
		opt.BlockingPoolCleanup = time.Minute
		opt.BlockingPoolMinSize = 4
	}
	if opt.ClientName == "" {
		opt.ClientName = "mediagw"
	}
	if opt.RetryDelay == nil {
		opt.RetryDelay = readRetryDelay
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		msg := redactURLError(err, o.URL)
		if o.SentinelPassword != "" {
			msg = strings.ReplaceAll(msg, o.SentinelPassword, "xxxxx")
		}
		return nil, fmt.Errorf("redis store: connecting to %s: %s", RedactURL(o.URL), msg)
	}
	prefix := o.KeyPrefix
	if prefix == "" {
		prefix = DefaultRedisKeyPrefix
	}
	r := &Redis{client: client, prefix: "{" + prefix + "}:", logger: o.Logger, now: time.Now,
		waitReplicas: int64(o.WaitReplicas), waitTimeout: o.WaitTimeout}
	r.checkPersistence(ctx)
	return r, nil
}

// redisReadRetries bounds how often a read-only command is sent again over a lost connection.
// rueidis retries those for as long as the caller's context allows, and a request's context
// has no deadline: while the server was down, the key lookup of every request waited for it
// for ever. With this bound a read gives up after about 4 s (backoff doubling from 1 µs to at
// most 1 s), and the request gets the store's failure answer.
const redisReadRetries = 23

// readRetryDelay is the client's RetryDelay: rueidis's exponential backoff (1 µs doubling, at
// most 1 s), no retry past redisReadRetries attempts, and none after a timeout: a server that
// takes connections but does not answer (a frozen host) would cost a new connection's timeout
// at every attempt, so the read fails after the first (the connection's 10 s) instead.
func readRetryDelay(attempts int, _ rueidis.Completed, err error) time.Duration {
	if attempts >= redisReadRetries || isTimeout(err) {
		return -1
	}
	return min(time.Second, time.Microsecond<<min(attempts, 20))
}

// isTimeout reports whether err is a connection's or a context's deadline passing.
func isTimeout(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &netErr) && netErr.Timeout()
}

// RedactURL returns the URL without its password, for logs and errors.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if _, err := url.Parse(raw); !ok || err != nil {
		// Where the password ends is unclear (a /, ? or # in it, not percent-encoded).
		return "(unparsable URL)"
	}
	pass, _, at, ok := urlPassword(rest)
	if !ok {
		return raw
	}
	return scheme + "://" + rest[:at-len(pass)] + "xxxxx" + rest[at:]
}

// urlPassword finds the password in what follows a URL's "://" as Go's url.Parse (and so the
// Redis client) reads it: the authority ends at the first /, ? or #, and its userinfo at its
// last @. It returns the password as written and decoded, and the offset of the @.
func urlPassword(rest string) (raw, decoded string, at int, ok bool) {
	authority := rest
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	at = strings.LastIndex(authority, "@")
	if at < 0 {
		return "", "", 0, false
	}
	_, raw, ok = strings.Cut(authority[:at], ":")
	if !ok {
		return "", "", 0, false
	}
	decoded, err := url.PathUnescape(raw)
	if err != nil {
		decoded = raw
	}
	return raw, decoded, at, true
}

// redactURLError is the message of err without the password of the URL raw, as written or
// decoded.
func redactURLError(err error, raw string) string {
	if _, perr := url.Parse(raw); perr != nil {
		// The parser's message quotes the URL, and its reason a piece of it.
		return "the URL cannot be parsed (percent-encode any @ : / ? # in the user name and password)"
	}
	msg := err.Error()
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		if pass, decoded, _, ok := urlPassword(rest); ok {
			msg = strings.ReplaceAll(msg, raw, RedactURL(raw))
			for _, p := range []string{pass, decoded} {
				if p != "" {
					msg = strings.ReplaceAll(msg, p, "xxxxx")
				}
			}
		}
	}
	return msg
}

// checkPersistence reads appendonly and appendfsync on every node the client writes to (each
// master of a Cluster) and warns when an acknowledged write could be lost by a restart of one;
// and it reads each one's replicas (ROLE) and warns when a failover to one could lose
// acknowledged writes (replicas but no wait_replicas) or when durable writes will fail (fewer
// replicas than wait_replicas).
func (r *Redis) checkPersistence(ctx context.Context) {
	nodes := r.client.Nodes()
	addrs := make([]string, 0, len(nodes))
	for addr := range nodes {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	for _, addr := range addrs {
		logger := r.logger.With(zap.String("redis_node", addr))
		checkNodePersistence(ctx, nodes[addr], logger)
		checkNodeReplicas(ctx, nodes[addr], logger, r.waitReplicas)
	}
}

// checkNodeReplicas warns when a node's replicas and waitReplicas do not go together.
func checkNodeReplicas(ctx context.Context, node rueidis.Client, logger *zap.Logger, waitReplicas int64) {
	role, err := node.Do(ctx, node.B().Role().Build()).ToArray()
	if err != nil {
		logger.Warn("could not read the redis replication role (ROLE refused?): with replicas, a failover can lose acknowledged writes unless wait_replicas is set",
			zap.Error(err))
		return
	}
	if len(role) < 3 {
		return
	}
	if kind, err := role[0].ToString(); err != nil || kind != "master" {
		return
	}
	replicas, err := role[2].ToArray()
	if err != nil {
		return
	}
	switch n := int64(len(replicas)); {
	case waitReplicas == 0 && n > 0:
		logger.Warn("redis replication is asynchronous: a failover to a replica can lose acknowledged tasks, charges and callbacks; set wait_replicas in the storage redis block (and min-replicas-to-write on the server)",
			zap.Int64("connected_replicas", n))
	case waitReplicas > n:
		logger.Warn("fewer replicas are connected than wait_replicas: durable writes fail until enough replicas are",
			zap.Int64("connected_replicas", n), zap.Int64("wait_replicas", waitReplicas))
	}
}

func checkNodePersistence(ctx context.Context, node rueidis.Client, logger *zap.Logger) {
	get := func(name string) (string, error) {
		m, err := node.Do(ctx, node.B().ConfigGet().Parameter(name).Build()).AsStrMap()
		if err != nil {
			return "", err
		}
		return m[name], nil
	}
	aof, err := get("appendonly")
	if err != nil {
		logger.Warn("could not read the redis persistence settings (CONFIG GET refused?): make sure the server runs with appendonly yes and appendfsync always, or acknowledged tasks can be lost when it restarts",
			zap.Error(err))
		return
	}
	fsync, err := get("appendfsync")
	if err != nil {
		logger.Warn("could not read appendfsync", zap.Error(err))
		return
	}
	if aof != "yes" || fsync != "always" {
		logger.Warn("redis persistence can lose acknowledged tasks: set appendonly yes and appendfsync always on the server",
			zap.String("appendonly", aof), zap.String("appendfsync", fsync))
	}
}

// Close closes the connections.
func (r *Redis) Close() error {
	r.client.Close()
	return nil
}

// key is the full name of a key.
func (r *Redis) key(parts ...string) string {
	return r.prefix + strings.Join(parts, "")
}

// exec runs a script.
func (r *Redis) exec(ctx context.Context, s luaScript, keys, args []string) rueidis.RedisResult {
	return s.Exec(ctx, r.client, keys, args)
}

// execInt runs a script that answers an integer.
func (r *Redis) execInt(ctx context.Context, s luaScript, keys, args []string) (int64, error) {
	return s.Exec(ctx, r.client, keys, args).AsInt64()
}

// wrote notes that this process changed a cached record, so it reads it past the cache while an
// invalidation may still be on its way.
func (r *Redis) wrote(cacheKey string) {
	r.written.Store(cacheKey, r.now().Add(2*MaxDirectoryStaleness).UnixNano())
}

// fresh reports whether this process must read the record past the cache.
func (r *Redis) fresh(cacheKey string) bool {
	v, ok := r.written.Load(cacheKey)
	if !ok {
		return false
	}
	if r.now().UnixNano() < v.(int64) {
		return true
	}
	r.written.CompareAndDelete(cacheKey, v)
	return false
}

// readRecord reads the v and j fields of a versioned record, from the client-side cache when
// cached is true.
func (r *Redis) readRecord(ctx context.Context, key string, cached bool) (version int64, data []byte, err error) {
	var res rueidis.RedisResult
	if cached && !r.fresh(key) {
		res = r.client.DoCache(ctx, r.client.B().Hmget().Key(key).Field("v", "j").Cache(), MaxDirectoryStaleness)
	} else {
		res = r.client.Do(ctx, r.client.B().Hmget().Key(key).Field("v", "j").Build())
	}
	vals, err := res.ToArray()
	if err != nil {
		return 0, nil, err
	}
	if len(vals) != 2 || vals[0].IsNil() {
		return 0, nil, ErrNotFound
	}
	vs, err := vals[0].ToString()
	if err != nil {
		return 0, nil, err
	}
	if version, err = strconv.ParseInt(vs, 10, 64); err != nil {
		return 0, nil, fmt.Errorf("redis store: bad version in %s: %v", key, err)
	}
	js, err := vals[1].ToString()
	if err != nil {
		return 0, nil, err
	}
	return version, []byte(js), nil
}

// micros is t in Unix microseconds, the unit of times inside the scripts.
func micros(t time.Time) int64 { return t.UnixMicro() }

// itoa formats an integer for a script argument.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// isNil reports whether err is Redis's nil answer.
func isNil(err error) bool { return rueidis.IsRedisNil(err) }

// errScript explains an answer that no script gives.
var errScript = errors.New("redis store: unexpected script answer")

// Interface guards
var _ Store = (*Redis)(nil)

// rueidisCompleted is a built command.
type rueidisCompleted = rueidis.Completed

// rueidisMessage is one value of an answer.
type rueidisMessage = rueidis.RedisMessage

// errField is the zap field of an error.
func errField(err error) zap.Field { return zap.Error(err) }
