package caddymodule

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
)

// Caddy's HTTP server keeps a copy of every request, taken before any handler runs, for its
// access log and its error log. That copy redacts Authorization, Proxy-Authorization and
// Cookie, but prints every other header and the query string as the client sent them, so a key
// sent as X-Api-Key, X-Goog-Api-Key or ?key= would land in the logs however early mediagw_auth
// removes it. For such a request (only those) mediagw_auth therefore:
//
//   - tells Caddy to skip its own access log entry (the log_skip variable), and writes the same
//     entry itself, to the same loggers, from the request without its credentials;
//   - answers any error of the handlers after it itself, in the endpoint's error shape, and logs
//     the error without the request's credentials, instead of returning the error to Caddy,
//     whose error log would print the copy.
//
// Requests that carry their key only in Authorization are left to Caddy's own logging.

// loggerName stands for a Caddy logger name, so that ctx.Logger gives a logger with the cores of
// the logs that include that name (Caddy's own access and error loggers are built this way).
type loggerName string

// CaddyModule returns the name as a module id; ctx.Logger only reads the id.
func (n loggerName) CaddyModule() caddy.ModuleInfo { return caddy.ModuleInfo{ID: caddy.ModuleID(n)} }

// credentialSafeLog writes the access and error log entries of requests whose credentials
// Caddy would otherwise print.
type credentialSafeLog struct {
	access *zap.Logger // http.log.access, as Caddy names it
	errors *zap.Logger // http.log.error
}

func newCredentialSafeLog(ctx caddy.Context) credentialSafeLog {
	return credentialSafeLog{
		access: ctx.Logger(loggerName("http.log.access")),
		errors: ctx.Logger(loggerName("http.log.error")),
	}
}

// exposes reports whether Caddy's copy of a request would print a credential, from what
// auth.Strip removed from the request (stripped): a credential header in any spelling
// (auth.IsCredentialHeader) other than the ones Caddy redacts (or any, when the server logs
// credentials), a key in a WebSocket subprotocol, or a key parameter in the request URI.
func exposes(stripped auth.Stripped, srv *caddyhttp.Server) bool {
	if srv != nil && srv.Logs != nil && srv.Logs.ShouldLogCredentials && stripped&auth.StrippedAuthorization != 0 {
		return true
	}
	return stripped&(auth.StrippedHeader|auth.StrippedQuery|auth.StrippedPath) != 0
}

// serve runs next for a request that exposes credentials (see exposes), r stripped of them, or
// whose answer may redirect to a presigned URL (mediagw_videos' content calls): the access log
// entry it writes prints neither (see withoutSignedLocation).
func (l credentialSafeLog) serve(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request) error) error {
	start := time.Now()
	srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	logged := r.Clone(r.Context())
	logAccess := srv != nil && srv.Logs != nil && loggedByCaddy(srv.Logs, r)
	var rec caddyhttp.ResponseRecorder
	var body *countingReader
	if logAccess {
		caddyhttp.SetVar(r.Context(), caddyhttp.LogSkipVar, true)
		rec = caddyhttp.NewResponseRecorder(w, nil, nil)
		w = rec
		if r.Body != nil && r.Body != http.NoBody {
			body = &countingReader{ReadCloser: r.Body}
			r.Body = body
		}
	}
	if logAccess {
		// Deferred: a download cut off midway ends in reverse_proxy's http.ErrAbortHandler panic,
		// and its entry is still written (Caddy's own was skipped).
		defer func() { l.writeAccess(srv, r, logged, rec, body, time.Since(start)) }()
	}
	if err := next(w, r); err != nil {
		l.answerError(w, r, logged, srv, err)
	}
	return nil
}

// serveRedirectable runs next for a request whose answer may redirect to a presigned URL (a
// video's or a file's content, read from a provider that keeps its results in object storage):
// when the server logs the request and no handler before took its entry over (log_skip, set by
// mediagw_auth or mediagw_videos, which write it the same way), the entry is l's, its Location
// without the signature (see serve). Every handler that passes on a provider's answer with its
// Location calls it: mediagw_videos for content calls, mediagw_route for every request but a POST.
func (l credentialSafeLog) serveRedirectable(w http.ResponseWriter, r *http.Request, next func(http.ResponseWriter, *http.Request) error) error {
	if skip, _ := caddyhttp.GetVar(r.Context(), caddyhttp.LogSkipVar).(bool); skip {
		return next(w, r)
	}
	if srv, _ := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); srv == nil || srv.Logs == nil || !loggedByCaddy(srv.Logs, r) {
		return next(w, r) // no entry to write
	}
	return l.serve(w, r, next)
}

// answerError answers an error that a later handler returned, as Caddy's error handling would
// (its status, no detail), but in the endpoint's error shape, and logs it without credentials.
func (l credentialSafeLog) answerError(w http.ResponseWriter, r, logged *http.Request, srv *caddyhttp.Server, err error) {
	status := http.StatusInternalServerError
	var he caddyhttp.HandlerError
	if errors.As(err, &he) && he.StatusCode >= 400 {
		status = he.StatusCode
	}
	code := strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
	if code == "" {
		code = "error"
	}
	msg := http.StatusText(status)
	if he.ID != "" {
		msg += " (id " + he.ID + ")"
	}
	level := zapcore.ErrorLevel
	if status < 500 {
		level = zapcore.DebugLevel
	}
	for _, logger := range namedLoggers(l.errors, srv, r) {
		if c := logger.Check(level, "handled request with an error"); c != nil {
			c.Write(zap.Object("request", loggableRequest(logged, srv)), zap.Int("status", status),
				zap.String("err_id", he.ID), zap.Error(err))
		}
	}
	apierror.Write(w, apierror.ShapeFor(r), apierror.New(status, code, msg))
}

// writeAccess writes the access log entry Caddy would have written, from the stripped request.
func (l credentialSafeLog) writeAccess(srv *caddyhttp.Server, r, logged *http.Request, rec caddyhttp.ResponseRecorder, body *countingReader, d time.Duration) {
	ctx := r.Context()
	status, size := rec.Status(), rec.Size()
	message := "handled request"
	if nop, ok := caddyhttp.GetVar(ctx, "unhandled").(bool); ok && nop {
		message = "NOP"
	}
	level := zapcore.InfoLevel
	if status >= 500 {
		level = zapcore.ErrorLevel
	}
	if name, ok := caddyhttp.GetVar(ctx, caddyhttp.LogLevelVar).(string); ok {
		if lv, err := zapcore.ParseLevel(name); err == nil && lv >= zapcore.DebugLevel && lv <= zapcore.ErrorLevel {
			level = lv
		}
	}
	read := 0
	if body != nil {
		read = body.n
	}
	userID, _ := replacer(r).GetString("http.auth.user.id")
	for _, logger := range namedLoggers(l.access, srv, r) {
		if c := logger.Check(level, message); c != nil {
			c.Write(
				zap.Object("request", loggableRequest(logged, srv)),
				zap.Int("bytes_read", read),
				zap.String("user_id", userID),
				zap.Duration("duration", d),
				zap.Int("size", size),
				zap.Int("status", status),
				zap.Object("resp_headers", caddyhttp.LoggableHTTPHeader{
					Header:               withoutSignedLocation(rec.Header()),
					ShouldLogCredentials: srv.Logs.ShouldLogCredentials,
				}),
			)
		}
	}
}

// withoutSignedLocation is an answer's headers as the access log may print them: the query and
// user information of a Location or Content-Location, which hold the signature of a presigned
// URL (a credential for its life), are replaced by REDACTED. Other headers are as sent.
func withoutSignedLocation(h http.Header) http.Header {
	logged, cloned := h, false
	for _, name := range [...]string{"Location", "Content-Location"} {
		locations := h.Values(name)
		if len(locations) == 0 {
			continue
		}
		if !cloned {
			logged, cloned = h.Clone(), true
		}
		logged.Del(name)
		for _, loc := range locations {
			logged.Add(name, unsignedURL(loc))
		}
	}
	return logged
}

// unsignedURL is loc without its query and user information (REDACTED in their place).
func unsignedURL(loc string) string {
	u, err := url.Parse(loc)
	switch {
	case err != nil:
		return "REDACTED"
	case u.RawQuery != "" || u.ForceQuery || u.User != nil:
		if u.RawQuery != "" || u.ForceQuery {
			u.RawQuery, u.ForceQuery = "REDACTED", false
		}
		u.User = nil
		return u.String()
	}
	return loc
}

func loggableRequest(r *http.Request, srv *caddyhttp.Server) caddyhttp.LoggableHTTPRequest {
	return caddyhttp.LoggableHTTPRequest{Request: r, ShouldLogCredentials: srv != nil && srv.Logs != nil && srv.Logs.ShouldLogCredentials}
}

// namedLoggers gives base the names Caddy's server would give its access or error logger for
// this request: the access_logger_names variable (log_name), else the logger names mapped to the
// request's host, else the server's default logger name.
func namedLoggers(base *zap.Logger, srv *caddyhttp.Server, r *http.Request) []*zap.Logger {
	var names []string
	if v, ok := caddyhttp.GetVar(r.Context(), caddyhttp.AccessLoggerNameVarKey).([]any); ok {
		for _, n := range v {
			s, _ := n.(string)
			names = append(names, s)
		}
	} else if srv != nil && srv.Logs != nil {
		names = hostLoggerNames(srv.Logs, requestHost(r))
	} else {
		names = []string{""}
	}
	loggers := make([]*zap.Logger, 0, len(names))
	for _, n := range names {
		if n == "" {
			loggers = append(loggers, base)
		} else {
			loggers = append(loggers, base.Named(n))
		}
	}
	return loggers
}

// hostLoggerNames is the server's logger names for a host: exact, then wildcard labels, then
// the default.
func hostLoggerNames(cfg *caddyhttp.ServerLogConfig, host string) []string {
	host = strings.ToLower(host)
	if names, ok := cfg.LoggerNames[host]; ok {
		return names
	}
	labels := strings.Split(host, ".")
	for i := range labels {
		if labels[i] == "" {
			continue
		}
		labels[i] = "*"
		if names, ok := cfg.LoggerNames[strings.Join(labels, ".")]; ok {
			return names
		}
	}
	return []string{cfg.DefaultLoggerName}
}

// loggedByCaddy reports whether the server's access log takes this request, as Caddy decides
// it: hosts mapped to a logger are logged, skipped hosts are not, unmapped hosts unless
// skip_unmapped_hosts.
func loggedByCaddy(cfg *caddyhttp.ServerLogConfig, r *http.Request) bool {
	host := requestHost(r)
	for name := range cfg.LoggerNames {
		if matchWildcard(host, name) {
			return true
		}
	}
	for _, skip := range cfg.SkipHosts {
		if matchWildcard(host, skip) {
			return false
		}
	}
	return !cfg.SkipUnmappedHosts
}

func requestHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	return host
}

// matchWildcard matches a host against a name whose labels may be "*" (one label each).
func matchWildcard(host, pattern string) bool {
	if strings.EqualFold(host, pattern) {
		return true
	}
	h, p := strings.Split(host, "."), strings.Split(pattern, ".")
	if len(h) != len(p) {
		return false
	}
	for i := range p {
		if p[i] != "*" && !strings.EqualFold(p[i], h[i]) {
			return false
		}
	}
	return true
}

// countingReader counts the request body bytes read, for bytes_read.
type countingReader struct {
	io.ReadCloser
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += n
	return n, err
}
