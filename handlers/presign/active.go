package presign

import (
	"path"
	"strings"
)

// javaScriptTypes are the JavaScript MIME type essences of the WHATWG MIME Sniffing standard.
var javaScriptTypes = map[string]bool{
	"application/ecmascript": true, "application/javascript": true, "application/x-ecmascript": true,
	"application/x-javascript": true, "text/ecmascript": true, "text/javascript": true,
	"text/javascript1.0": true, "text/javascript1.1": true, "text/javascript1.2": true,
	"text/javascript1.3": true, "text/javascript1.4": true, "text/javascript1.5": true,
	"text/jscript": true, "text/livescript": true, "text/x-ecmascript": true, "text/x-javascript": true,
}

// documentTypes are rendered by browsers as documents that can run script.
var documentTypes = map[string]bool{
	"text/html": true, "application/xhtml+xml": true, "image/svg+xml": true, "text/xml": true,
	"application/xml": true, "text/xsl": true, "application/x-shockwave-flash": true,
	// Firefox renders each part of such a body as its own type, text/html included.
	"multipart/x-mixed-replace": true,
}

// sniffedTypes are the types for which browsers guess the type from the bytes (the "unknown MIME
// type" rules of WHATWG MIME Sniffing): an uploaded HTML file stored under one is rendered as
// HTML. (A wildcard such as */* names no type, and check refuses it.)
var sniffedTypes = map[string]bool{"unknown/unknown": true, "application/unknown": true, "*/*": true}

// IsActiveContent reports whether a media type (lowercase, without parameters) is active
// content: a type that a browser opening the uploaded object's public URL would render as a
// document that runs script (HTML, XHTML, SVG and other XML types, multipart/x-mixed-replace),
// run as a script, or sniff from the bytes (unknown/unknown, application/unknown). Such
// uploads would let anyone with a key serve script from the bucket's origin, so presign refuses
// them unless allowed_content_types names them exactly.
func IsActiveContent(mediaType string) bool {
	return documentTypes[mediaType] || javaScriptTypes[mediaType] || sniffedTypes[mediaType] || strings.HasSuffix(mediaType, "+xml")
}

// activeExtensions are file extensions that web servers and CDNs map to active content when they
// choose a type by the name rather than by the stored Content-Type.
var activeExtensions = map[string]bool{
	"htm": true, "html": true, "shtml": true, "xht": true, "xhtml": true, "svg": true, "svgz": true,
	"xml": true, "xsl": true, "xslt": true, "js": true, "mjs": true, "cjs": true, "hta": true,
	"swf": true, "htaccess": true,
}

// extensionSource is the filename whose extension the object key keeps: filename itself, or ""
// (no extension) when the extension names active content but the upload's type is not active
// content, so that an image/png upload cannot be served as page.html by a server that goes by
// the name.
func extensionSource(filename, contentType string) string {
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(filename), "."))
	mt, _, _ := strings.Cut(contentType, ";")
	if activeExtensions[ext] && !IsActiveContent(strings.TrimSpace(mt)) {
		return ""
	}
	return filename
}
