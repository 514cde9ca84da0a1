package media

import (
	"net/url"
	"testing"

	"github.com/mediagw/mediagw/handlers/publicnet"
)

func TestCheckMediaURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://cdn.example.com/a.png":     true,
		"https://CDN.Example.com./a.png":    true,
		"https://cdn.example.com:8443/a":    true,
		"http://203.0.114.7/a.mp4":          true,
		"https://8.8.8.8/x.png":             true,
		"https://134744072/x.png":           true, // 8.8.8.8
		"http://[2606:4700:4700::1111]/a":   true,
		"http://[2606:4700:4700::1111]:8/a": true,
		"":                                  false,
		"/tmp/a.png":                        false,
		"file:///etc/passwd":                false,
		"ftp://example.com/a.png":           false,
		"data:image/png;base64,AAAA":        false,
		"https://user:pw@example.com/a.png": false,
		"https://b.s3.amazonaws.com/k?X-Amz-Credential=x&X-Amz-Signature=y": false,
		"https://b.s3.amazonaws.com/k?AWSAccessKeyId=a&Signature=s":         false,
		// Temporary signatures in any case or encoding, of any object storage.
		"https://b.s3.amazonaws.com/k?x-amz-signature=y":                false,
		"https://b.s3.amazonaws.com/k?X%2DAmz%2DSignature=y":            false,
		"https://b.s3.amazonaws.com/k?X-Amz-Signature=%zz":              false,
		"https://b.s3.amazonaws.com/k?a=%zz&X-Amz-Credential=x":         false,
		"https://storage.googleapis.com/b/k?X-Goog-Signature=y":         false,
		"https://storage.googleapis.com/b/k?GoogleAccessId=a&Expires=1": false,
		"https://b.oss-cn-beijing.aliyuncs.com/k?x-oss-signature=y":     false,
		"https://b.oss-cn-beijing.aliyuncs.com/k?OSSAccessKeyId=a":      false,
		"https://b.cos.ap-beijing.myqcloud.com/k?q-sign-algorithm=sha1": false,
		"https://a.blob.core.windows.net/c/k?sv=2022-11-02&sig=y":       false,
		// Volcengine TOS (the object storage beside Ark), Baidu BOS and Backblaze B2.
		"https://b.tos-cn-beijing.volces.com/k?X-Tos-Algorithm=TOS4-HMAC-SHA256&X-Tos-Credential=a&X-Tos-Signature=y": false,
		"https://b.tos-cn-beijing.volces.com/k?x-tos-signature=y":                                                     false,
		"https://b.bj.bcebos.com/k?authorization=bce-auth-v1%2Fak%2F2024-01-01T00%3A00%3A00Z%2F3600%2F%2Fsig":         false,
		"https://f000.backblazeb2.com/file/b/k?Authorization=3_2024_token":                                            false,
		"https://cdn.example.com/a.png?sig=thumbnail":                                                                 true,
		"https://cdn.example.com/a.png?v=2&size=large":                                                                true,
		"http://127.0.0.1/a.png":         false,
		"http://[::ffff:10.1.1.1]/a.png": false,
		"http://172.20.0.3/a.png":        false,
		"http://intranet/a.png":          false,
		"http://printer.local/a.png":     false,
		// Non-canonical spellings of private addresses.
		"http://127.1/":                 false,
		"http://0x7f.1/":                false,
		"http://0177.0.0.1/":            false,
		"http://2130706433/":            false,
		"http://0x7f000001/":            false,
		"http://127.0.0.1./":            false,
		"http://127.0.0.1.:8080/":       false,
		"http://[::127.0.0.1]/":         false,
		"http://[::ffff:7f00:1]/":       false,
		"http://[0:0:0:0:0:0:0:1]/":     false,
		"http://[::ffff:0:7f00:1]/":     false,
		"http://0/":                     false,
		"http://0.0.0.0:80/":            false,
		"http://169.254.43518/latest":   false,
		"http://0xa9fea9fe/latest":      false,
		"http://10.0xff.0377.1/":        false,
		"http://%31%32%37.0.0.1/":       false,
		"http://127.0.0.1%2f.x.com/":    false,
		"http://[fe80::1%25eth0]/":      false,
		"http://[2606:4700::1%25eth0]/": false,
		"http://１２７.０.０.１/":             false,
		"http://127。0。0。1/":             false,
		"http://1.2.3.4.5/":             false,
		"http://256.1.1.1/":             false,
		"http://LOCALHOST./":            false,
		"http://[64:ff9b::7f00:1]/":     false,
		"http://[2002:7f00:1::]/":       false,
		// A port that no address has: nothing could ever fetch it.
		"https://cdn.example.com:0/a.png":     false,
		"https://cdn.example.com:65536/a.png": false,
		"https://cdn.example.com:99999/a.png": false,
		"http://[2606:4700::1111]:0/a":        false,
		"https://cdn.example.com:65535/a.png": true,
		"https://cdn.example.com:/a.png":      true, // an empty port is the scheme's
	} {
		if err := CheckMediaURL(raw); (err == nil) != ok {
			t.Errorf("CheckMediaURL(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
	// A callback URL only needs the http(s) shape: private receivers are refused when dialling.
	if err := CheckURL("http://127.0.0.1:9000/hook"); err != nil {
		t.Errorf("CheckURL refused a loopback callback: %v", err)
	}
	// A receiver may authenticate its callbacks with a signature or token in the query.
	if err := CheckURL("https://hooks.example.com/cb?Signature=abc&token=x"); err != nil {
		t.Errorf("CheckURL refused a callback URL with a signature parameter: %v", err)
	}
}

// FuzzCheckMediaURL checks that an accepted URL never names a non-public address, however its
// host is spelled.
func FuzzCheckMediaURL(f *testing.F) {
	for _, s := range []string{"https://cdn.example.com/a.png", "http://[fe80::1%25eth0]/x", "http://127.1/",
		"http://0x7f.1/", "http://2130706433/", "http://[::127.0.0.1]/", "http://１２７.0.0.1/", "http://a.b:1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if CheckMediaURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("accepted %q, which does not parse: %v", raw, err)
		}
		h, err := publicnet.ParseHost(withoutPort(u.Host))
		if err != nil {
			t.Fatalf("accepted %q, whose host does not parse: %v", raw, err)
		}
		if h.IsIP() && !publicnet.IsPublic(h.Addr) {
			t.Fatalf("accepted %q, which names %s", raw, h.Addr)
		}
		if !h.IsIP() && publicnet.IsLocalName(h.Name) {
			t.Fatalf("accepted %q, which names the local host %s", raw, h.Name)
		}
	})
}
