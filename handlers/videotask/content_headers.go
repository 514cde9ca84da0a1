package videotask

import "net/http"

// contentHeaders sets the headers of the content endpoint's answer (dst) from the provider's
// (src): the provider's Content-Length, Last-Modified and Etag, each only when it carries none
// of secrets (a provider may echo the operator's credential in any header it sends); the
// provider's Content-Type only when it is one of the usual result types (keptType), video/mp4
// when it sends none, application/octet-stream for any other (a provider's text/html or SVG
// must not become a page or a script on the gateway's origin, nor carry a credential in a
// parameter); nosniff, so that a browser takes that type as it is; and Cache-Control: private,
// no-store.
func contentHeaders(dst, src http.Header, secrets []string) {
	for _, name := range []string{"Content-Length", "Last-Modified", "Etag"} {
		if v := src.Get(name); v != "" && !carriesCredential(v, secrets) {
			dst.Set(name, v)
		}
	}
	contentType := "video/mp4"
	if v := src.Get("Content-Type"); v != "" {
		contentType = keptType(v)
	}
	dst.Set("Content-Type", contentType)
	dst.Set("X-Content-Type-Options", "nosniff")
	dst.Set("Cache-Control", "private, no-store")
}
