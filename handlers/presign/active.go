package presign

import "strings"

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
}

// IsActiveContent reports whether a media type (lowercase, without parameters) is active
// content: a type that a browser opening the uploaded object's public URL would render as a
// document that runs script (HTML, XHTML, SVG and other XML types) or run as a script. Such
// uploads would let anyone with a key serve script from the bucket's origin, so presign refuses
// them unless allowed_content_types names them exactly.
func IsActiveContent(mediaType string) bool {
	return documentTypes[mediaType] || javaScriptTypes[mediaType] || strings.HasSuffix(mediaType, "+xml")
}
