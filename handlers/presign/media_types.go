package presign

import (
	"path"
	"strings"
)

// Without allowed_content_types, presign accepts uploads of reference media only, by an
// allow-list rather than a deny-list: a type nobody thought of (message/rfc822, which browsers
// render as MHTML; multipart/related; application/x-httpd-php …) is refused, not accepted. The
// list is the image, video and audio types that generation providers take, and
// application/octet-stream, the interface's default content_type. The filename's extension, the
// only part of it the object key keeps, must be one of mediaExtensions (or absent), so that a
// server or CDN choosing a type by the name cannot serve the object as .mht, .php or .html.
// An operator's allowed_content_types replaces both lists.

// mediaTypes are the media types (lowercase, without parameters) accepted by default.
var mediaTypes = map[string]bool{
	"application/octet-stream": true,

	"image/png": true, "image/jpeg": true, "image/jpg": true, "image/pjpeg": true, "image/gif": true,
	"image/webp": true, "image/bmp": true, "image/x-ms-bmp": true, "image/tiff": true, "image/heic": true,
	"image/heif": true, "image/avif": true,

	"video/mp4": true, "video/mpeg": true, "video/webm": true, "video/ogg": true, "video/quicktime": true,
	"video/x-msvideo": true, "video/x-matroska": true, "video/3gpp": true, "video/x-flv": true,
	"video/mp2t": true,

	"audio/mpeg": true, "audio/mp3": true, "audio/mp4": true, "audio/m4a": true, "audio/x-m4a": true,
	"audio/aac": true, "audio/wav": true, "audio/wave": true, "audio/x-wav": true, "audio/vnd.wave": true,
	"audio/webm": true, "audio/ogg": true, "audio/opus": true, "audio/flac": true, "audio/x-flac": true,
	"audio/amr": true, "audio/3gpp": true, "audio/aiff": true, "audio/x-aiff": true,
}

// mediaExtensions are the filename extensions (lowercase, without the dot) accepted by default.
var mediaExtensions = map[string]bool{
	"png": true, "jpg": true, "jpeg": true, "jfif": true, "gif": true, "webp": true, "bmp": true,
	"tif": true, "tiff": true, "heic": true, "heif": true, "avif": true,
	"mp4": true, "m4v": true, "mpeg": true, "mpg": true, "webm": true, "ogv": true, "mov": true,
	"avi": true, "mkv": true, "3gp": true, "flv": true, "ts": true,
	"mp3": true, "m4a": true, "aac": true, "wav": true, "oga": true, "ogg": true, "opus": true,
	"flac": true, "amr": true, "aif": true, "aiff": true, "weba": true,
}

// isMediaType reports whether a media type (lowercase, without parameters) is accepted by
// default.
func isMediaType(mediaType string) bool { return mediaTypes[mediaType] }

// hasMediaExtension reports whether filename has no extension or a media one, in any case.
func hasMediaExtension(filename string) bool {
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(filename), "."))
	return ext == "" || mediaExtensions[ext]
}
