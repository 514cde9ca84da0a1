// Package media checks the reference media URLs that clients put in generation requests: they must
// be public http(s) addresses the model can fetch, never local paths, inline data or presigned
// upload URLs.
package media

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/publicnet"
)

// CheckURL returns an error that says why raw is not an absolute http(s) URL without credentials,
// or nil. It is the shape of a callback URL, whose receiver may well take a signature or token in
// its query; media URLs are checked further by CheckMediaURL.
func CheckURL(raw string) error {
	if strings.TrimSpace(raw) == "" {
		return fmt.Errorf("is empty")
	}
	lower := strings.ToLower(raw)
	if strings.HasPrefix(lower, "data:") {
		return fmt.Errorf("must be a public http(s) URL, not inline data (data:/Base64)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("must be an absolute http(s) URL (local paths and other schemes are not accepted)")
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials")
	}
	return checkPort(u)
}

// checkPort refuses a port outside 1 to 65535, which url.Parse lets through: a callback to it
// would only be retried until it is given up, and a provider could not fetch from it.
func checkPort(u *url.URL) error {
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("has the port %s; a port is 1 to 65535", p)
		}
	}
	return nil
}

// CheckPassThroughURL checks a media URL in a pass-through body (a chat image, a document
// source): inline data (data:) is accepted there, as the protocols define it; any other URL must
// be an absolute http(s) URL of a public host without credentials, as for CheckMediaURL, since
// the provider (possibly a model server in the operator's own network) fetches it. Signed URLs
// are accepted: a signed download URL is a usual way to share a private file with a model.
func CheckPassThroughURL(raw string) error {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(raw)), "data:") {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("must be inline data (data:) or an absolute http(s) URL")
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials")
	}
	if err := checkPort(u); err != nil {
		return err
	}
	return checkPublicHost(u)
}

// CheckMediaURL is CheckURL for a reference image, video or audio: the URL must not be a presigned
// (temporary, signed) one (IsPresigned), and the host must also be public,
// not an IP address of a loopback, private or special-purpose range, nor a local name, since the
// model's network must be able to fetch it. The host is read as browsers and inet_aton read it
// (publicnet.ParseHost), so 127.1, 0x7f.1, 2130706433, 127.0.0.1., [::127.0.0.1] or full-width
// digits are refused like 127.0.0.1; percent-encoded hosts, IPv6 zones and hosts that end in a
// number without being an IPv4 address are refused outright.
func CheckMediaURL(raw string) error {
	if err := CheckURL(raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("must be an absolute http(s) URL")
	}
	if IsPresigned(u) {
		return fmt.Errorf("is a presigned (temporary, signed) URL: give a public URL, such as the public_url from the presign response")
	}
	return checkPublicHost(u)
}

// CheckPublicHost returns an error when the host of the URL raw is not public, as CheckMediaURL
// reads it, or nil. The URL's other parts are not checked.
func CheckPublicHost(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("must be an absolute http(s) URL")
	}
	return checkPublicHost(u)
}

// checkPublicHost refuses a URL whose host is not public.
func checkPublicHost(u *url.URL) error {
	host, err := publicnet.ParseHost(withoutPort(u.Host))
	if err != nil {
		return fmt.Errorf("must be a public URL: %v", err)
	}
	if host.IsIP() {
		if !publicnet.IsPublic(host.Addr) {
			return fmt.Errorf("must be a public URL: %s is not a public address", host.Addr)
		}
	} else if publicnet.IsLocalName(host.Name) {
		return fmt.Errorf("must be a public URL: %s is not a public host name", host.Name)
	}
	return nil
}

// withoutPort strips a :port from a URL host, leaving an IPv6 literal's brackets.
func withoutPort(hostport string) string {
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.Contains(hostport[i:], "]") {
		return hostport[:i]
	}
	return hostport
}

// IsPresigned reports whether u carries an object storage query signature, which makes it a
// temporary address (and, from the presign endpoint, an upload address, not a readable one): S3
// SigV4 and SigV2, Google Cloud Storage V4 and V2, Alibaba OSS V4 and V1, Tencent COS, Volcengine
// TOS, an Azure SAS, and a credential in an authorization parameter (Baidu BOS, Backblaze B2). Parameter names are matched in any letter case and percent-encoding, and a parameter whose
// value is badly encoded still counts (url.Values would drop it).
func IsPresigned(u *url.URL) bool {
	azureSig, azureVersion := false, false
	for pair := range strings.SplitSeq(u.RawQuery, "&") {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		switch strings.ToLower(key) {
		case "x-amz-signature", "x-amz-credential", "signature", "awsaccesskeyid",
			"x-goog-signature", "x-goog-credential", "googleaccessid",
			"x-oss-signature", "x-oss-credential", "ossaccesskeyid",
			"q-signature", "q-sign-algorithm",
			"x-tos-signature", "x-tos-credential", "authorization":
			return true
		case "sig":
			azureSig = true
		case "sv":
			azureVersion = true
		}
	}
	return azureSig && azureVersion
}
