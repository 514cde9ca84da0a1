package caddymodule

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/caddyserver/caddy/v2"
)

// loadTLS builds the TLS settings of a rediss:// connection from the configured files (their
// names may carry placeholders), and a digest of the files' contents, so that a reload after a
// certificate was replaced opens a new client. It answers nil when none is configured: the URL's
// host is then checked against the system's CAs.
func (s *RedisStorage) loadTLS(repl *caddy.Replacer) (*tls.Config, string, error) {
	if s.TLSCAFile == "" && s.TLSClientCertFile == "" && s.TLSClientKeyFile == "" && s.TLSServerName == "" {
		return nil, "", nil
	}
	digest := sha256.New() // its Write never fails
	config := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: repl.ReplaceKnown(s.TLSServerName, "")}
	if s.TLSCAFile != "" {
		name := repl.ReplaceKnown(s.TLSCAFile, "")
		pem, err := os.ReadFile(name)
		if err != nil {
			return nil, "", fmt.Errorf("redis storage: reading tls_ca: %v", err)
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return nil, "", fmt.Errorf("redis storage: tls_ca %s holds no PEM certificate", name)
		}
		digest.Write(pem)
	}
	if (s.TLSClientCertFile == "") != (s.TLSClientKeyFile == "") {
		return nil, "", fmt.Errorf("redis storage: a client certificate needs both its certificate and its key file")
	}
	if s.TLSClientCertFile != "" {
		certPEM, err := os.ReadFile(repl.ReplaceKnown(s.TLSClientCertFile, ""))
		if err != nil {
			return nil, "", fmt.Errorf("redis storage: reading tls_client_cert: %v", err)
		}
		keyPEM, err := os.ReadFile(repl.ReplaceKnown(s.TLSClientKeyFile, ""))
		if err != nil {
			return nil, "", fmt.Errorf("redis storage: reading the tls_client_cert key: %v", err)
		}
		// The error names what is wrong, never the key's bytes.
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, "", fmt.Errorf("redis storage: loading tls_client_cert: %v", err)
		}
		config.Certificates = []tls.Certificate{cert}
		digest.Write(certPEM)
		digest.Write(keyPEM)
	}
	return config, hex.EncodeToString(digest.Sum(nil)), nil
}
