package caddymodule

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/caddyserver/caddy/v2"
)

// loadTLS builds the TLS settings of a rediss:// connection from the configured files (their
// names may carry placeholders). It answers nil when none is configured: the URL's host is then
// checked against the system's CAs.
func (s *RedisStorage) loadTLS(repl *caddy.Replacer) (*tls.Config, error) {
	if s.TLSCAFile == "" && s.TLSClientCertFile == "" && s.TLSClientKeyFile == "" && s.TLSServerName == "" {
		return nil, nil
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: repl.ReplaceKnown(s.TLSServerName, "")}
	if s.TLSCAFile != "" {
		name := repl.ReplaceKnown(s.TLSCAFile, "")
		pem, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("redis storage: reading tls_ca: %v", err)
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis storage: tls_ca %s holds no PEM certificate", name)
		}
	}
	if (s.TLSClientCertFile == "") != (s.TLSClientKeyFile == "") {
		return nil, fmt.Errorf("redis storage: a client certificate needs both its certificate and its key file")
	}
	if s.TLSClientCertFile != "" {
		// A key file's content never reaches the error: LoadX509KeyPair names what is wrong,
		// not the bytes.
		cert, err := tls.LoadX509KeyPair(repl.ReplaceKnown(s.TLSClientCertFile, ""), repl.ReplaceKnown(s.TLSClientKeyFile, ""))
		if err != nil {
			return nil, fmt.Errorf("redis storage: loading tls_client_cert: %v", err)
		}
		config.Certificates = []tls.Certificate{cert}
	}
	return config, nil
}
