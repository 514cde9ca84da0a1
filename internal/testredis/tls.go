package testredis

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLS is a throwaway certificate authority and the files a TLS server and its clients need:
// a server certificate for 127.0.0.1 and localhost, and a client certificate, both signed by
// the CA. It is made for one test and never trusted outside it.
type TLS struct {
	// CAFile is the PEM certificate of the CA.
	CAFile string
	// CertFile and KeyFile are the server's certificate and key (PEM).
	CertFile, KeyFile string
	// ClientCertFile and ClientKeyFile are a client certificate and key (PEM).
	ClientCertFile, ClientKeyFile string

	pool *x509.CertPool
}

// NewTLS makes a CA and its certificates in a temporary directory.
func NewTLS(tb TB) *TLS {
	tb.Helper()
	dir := tb.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("CA key: %v", err)
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mediagw test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatalf("CA certificate: %v", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatalf("CA certificate: %v", err)
	}
	t := &TLS{CAFile: filepath.Join(dir, "ca.pem"), pool: x509.NewCertPool()}
	t.pool.AddCert(caCert)
	writePEM(tb, t.CAFile, "CERTIFICATE", caDER)

	leaf := func(serial int64, name string, usage ...x509.ExtKeyUsage) (certFile, keyFile string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatalf("%s key: %v", name, err)
		}
		template := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usage,
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, caCert, &key.PublicKey, caKey)
		if err != nil {
			tb.Fatalf("%s certificate: %v", name, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			tb.Fatalf("%s key: %v", name, err)
		}
		certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		writePEM(tb, certFile, "CERTIFICATE", der)
		writePEM(tb, keyFile, "PRIVATE KEY", keyDER)
		return certFile, keyFile
	}
	// A server is a client too when it replicates or monitors another (Redis shows its own
	// certificate then).
	t.CertFile, t.KeyFile = leaf(2, "server", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	t.ClientCertFile, t.ClientKeyFile = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return t
}

// ClientConfig trusts the CA (and nothing else), and shows no client certificate.
func (t *TLS) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: t.pool, MinVersion: tls.VersionTLS12}
}

// adminConfig trusts the CA and shows the client certificate, so that the helpers reach a
// server that requires one.
func (t *TLS) adminConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(t.ClientCertFile, t.ClientKeyFile)
	if err != nil {
		return nil, err
	}
	c := t.ClientConfig()
	c.Certificates = []tls.Certificate{cert}
	return c, nil
}

func writePEM(tb TB, path, kind string, der []byte) {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		tb.Fatalf("writing %s: %v", path, err)
	}
}
