package media

import "testing"

func TestCheckMediaURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://cdn.example.com/a.png":     true,
		"http://203.0.114.7/a.mp4":          true,
		"https://8.8.8.8/x.png":             true,
		"":                                  false,
		"/tmp/a.png":                        false,
		"file:///etc/passwd":                false,
		"ftp://example.com/a.png":           false,
		"data:image/png;base64,AAAA":        false,
		"https://user:pw@example.com/a.png": false,
		"https://b.s3.amazonaws.com/k?X-Amz-Credential=x&X-Amz-Signature=y": false,
		"https://b.s3.amazonaws.com/k?AWSAccessKeyId=a&Signature=s":         false,
		"http://127.0.0.1/a.png":         false,
		"http://[::ffff:10.1.1.1]/a.png": false,
		"http://172.20.0.3/a.png":        false,
		"http://intranet/a.png":          false,
		"http://printer.local/a.png":     false,
	} {
		if err := CheckMediaURL(raw); (err == nil) != ok {
			t.Errorf("CheckMediaURL(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
	// A callback URL only needs the http(s) shape: private receivers are refused when dialling.
	if err := CheckURL("http://127.0.0.1:9000/hook"); err != nil {
		t.Errorf("CheckURL refused a loopback callback: %v", err)
	}
}

func FuzzCheckMediaURL(f *testing.F) {
	f.Add("https://cdn.example.com/a.png")
	f.Add("http://[fe80::1%25eth0]/x")
	f.Fuzz(func(t *testing.T, raw string) {
		_ = CheckMediaURL(raw)
	})
}
