// Package presign serves POST /v1/upload/presign: a short-lived presigned PUT URL with which the
// client uploads a file straight to object storage, so file bytes never pass through mediagw.
package presign

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// Path is the endpoint's path, the one path a handler in front of Handler gives it: every other
// one (/v1/upload/presign/, /V1/UPLOAD/PRESIGN, //v1/upload/presign) goes on.
const Path = "/v1/upload/presign"

// Defaults.
const (
	DefaultExpires     = 15 * time.Minute
	DefaultContentType = "application/octet-stream"
	maxFilenameBytes   = 255
	maxBodyBytes       = 16 << 10
)

// Presigner signs uploads; *S3 is the implementation.
type Presigner interface {
	PresignPut(ctx context.Context, objectKey, contentType string, expires time.Duration) (string, http.Header, error)
	PublicURL(objectKey string) string
}

// Handler answers presign requests. A nil Storage means uploads are not configured (503).
type Handler struct {
	Storage Presigner
	// PublicBaseURL, when set, is joined with the object key to make public_url.
	PublicBaseURL string
	// Prefix starts every object key, e.g. "uploads/".
	Prefix string
	// Expires is the life of a presigned URL. Default: 15 minutes.
	Expires time.Duration
	// AllowedContentTypes, when set, restricts content_type (entries like "image/png" or "image/*").
	// Active content (see IsActiveContent) is refused unless an entry names it exactly. Default:
	// the image, video and audio types of an explicit list, and application/octet-stream, with a
	// filename of a media extension or none (see media_types.go).
	AllowedContentTypes []string
	// Limit bounds presign calls per API key; nil means no limit.
	Limit  *RateLimit
	Logger *zap.Logger
	// Now is the clock that dates object keys and expires_at. Default: time.Now.
	Now func() time.Time
}

// now reads the handler's clock.
func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// RateLimit allows Requests presign calls per API key in any Window. The window is kept in the
// store, so every gateway that shares the store shares it.
type RateLimit struct {
	Requests int
	Window   time.Duration
	// Windows counts the calls: the store (storage.Store's AllowRate).
	Windows interface {
		AllowRate(ctx context.Context, name string, limit int, window time.Duration, now time.Time) (bool, time.Duration, error)
	}
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

// allow counts a call of key.
func (l *RateLimit) allow(ctx context.Context, keyID string) (bool, time.Duration, error) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	name := fmt.Sprintf("presign/%s/%d/%s", keyID, l.Requests, l.Window)
	return l.Windows.AllowRate(ctx, name, l.Requests, l.Window, now())
}

// Request is the presign request body.
type Request struct {
	Filename    *string `json:"filename"`
	ContentType *string `json:"content_type"`
}

// Response is the presign answer (spec §2.9).
type Response struct {
	URL       string            `json:"url"`
	PublicURL string            `json:"public_url"`
	Method    string            `json:"method"`
	ObjectKey string            `json:"object_key"`
	Headers   map[string]string `json:"headers"`
	ExpiresAt int64             `json:"expires_at"`
}

var (
	errUnavailable = apierror.New(http.StatusServiceUnavailable, "upload_service_unavailable", "uploads are not configured on this gateway")
	errFailed      = apierror.New(http.StatusInternalServerError, "upload_presign_failed", "the upload URL could not be created; retry later")
	errBodyJSON    = apierror.NotJSONObject("invalid_request_body")
	extension      = regexp.MustCompile(`^[a-z0-9]{1,16}$`)
)

func invalidUpload(param, msg string) *apierror.Error {
	return apierror.New(http.StatusBadRequest, "invalid_upload_request", msg).WithParam(param)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.serve(w, r); err != nil {
		apierror.Respond(w, apierror.OpenAIShape, h.Logger, err)
	}
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodPost {
		return apierror.MethodNotAllowed(w, http.MethodPost)
	}
	id, ok := auth.FromContext(r.Context())
	if !ok {
		return auth.ErrMissingKey
	}
	if h.Limit != nil {
		ok, wait, err := h.Limit.allow(r.Context(), id.KeyID)
		if err != nil {
			return err
		}
		if !ok {
			return apierror.New(http.StatusTooManyRequests, "rate_limit_exceeded",
				"too many presign requests for this API key: at most "+strconv.Itoa(h.Limit.Requests)+" per "+apierror.FormatDuration(h.Limit.Window)+"; retry after the time in Retry-After").WithRetryAfter(wait)
		}
	}
	if h.Storage == nil {
		return errUnavailable
	}
	req, err := parseRequest(w, r)
	if err != nil {
		return err
	}
	filename, contentType, err := h.check(req)
	if err != nil {
		return err
	}
	key := h.objectKey(id.Account, extensionSource(filename, contentType))
	expires := h.expires()
	issued := h.now()
	url, signed, err := h.Storage.PresignPut(r.Context(), key, contentType, expires)
	if err != nil {
		// The error names the bucket at most; the URL was never made, so nothing secret is logged.
		h.Logger.Error("presigning upload failed", zap.String("object_key", key), zap.Error(err))
		return errFailed
	}
	headers := map[string]string{}
	for k, v := range signed {
		headers[k] = strings.Join(v, ",")
	}
	headers["Content-Type"] = contentType
	w.Header().Set("Cache-Control", "no-store")
	return apierror.WriteJSON(w, http.StatusOK, Response{
		URL: url, PublicURL: h.publicURL(key), Method: http.MethodPut, ObjectKey: key,
		Headers: headers, ExpiresAt: issued.Add(expires).Unix(),
	})
}

func parseRequest(w http.ResponseWriter, r *http.Request) (Request, error) {
	var req Request
	if !apierror.IsJSON(r) {
		return req, apierror.WrongContentType(r, "invalid_request_body", "application/json", "")
	}
	body, err := apierror.ReadBody(w, r, maxBodyBytes, "invalid_request_body")
	if err != nil {
		return req, err
	}
	obj, err := jsonkeys.Members(body, "filename", "content_type", "object_key", "key")
	if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
		code := "invalid_request_body"
		if e.Field == "object_key" || e.Field == "key" {
			code = "invalid_upload_request" // as the exact spelling is (below), in any case
		}
		return req, apierror.New(http.StatusBadRequest, code, e.Field+" is refused: "+e.Error()).WithParam(e.Field)
	}
	if err != nil {
		return req, errBodyJSON
	}
	// The object key is the gateway's to choose (spec §2.8): a client that names one is told so,
	// rather than given a key it did not ask for.
	for _, name := range [...]string{"object_key", "key"} {
		if _, ok := obj[name]; ok {
			return req, invalidUpload(name, name+" cannot be chosen: the gateway names the object and answers its object_key")
		}
	}
	for name, dst := range map[string]**string{"filename": &req.Filename, "content_type": &req.ContentType} {
		if raw, ok := obj[name]; ok && json.Unmarshal(raw, dst) != nil {
			return req, apierror.New(http.StatusBadRequest, "invalid_request_body", name+" must be a string").WithParam(name)
		}
	}
	return req, nil
}

// check validates the filename and content type and returns them ready to use.
func (h *Handler) check(req Request) (filename, contentType string, err error) {
	// A name of white space only names no file: it is as missing as an empty one.
	if req.Filename == nil || strings.TrimSpace(*req.Filename) == "" {
		return "", "", invalidUpload("filename", "filename is required")
	}
	filename = *req.Filename
	switch {
	case len(filename) > maxFilenameBytes:
		return "", "", invalidUpload("filename", "filename must be at most 255 bytes")
	case strings.ContainsRune(filename, utf8.RuneError):
		// JSON decoding turns invalid UTF-8 and lone surrogate escapes (\ud800) into U+FFFD.
		return "", "", invalidUpload("filename", "filename must be valid UTF-8")
	case strings.IndexFunc(filename, isControl) >= 0:
		return "", "", invalidUpload("filename", "filename must not contain control characters")
	}
	contentType = DefaultContentType
	if req.ContentType != nil && *req.ContentType != "" {
		contentType = *req.ContentType
	}
	mt, params, err := mime.ParseMediaType(contentType)
	// A wildcard (image/*, */*) names no type; browsers sniff what is stored under */*.
	if err != nil || strings.IndexFunc(contentType, isControl) >= 0 || !strings.Contains(mt, "/") || strings.Contains(mt, "*") || len(contentType) > 255 {
		return "", "", invalidUpload("content_type", "content_type must be a MIME type such as image/png")
	}
	// What is signed (and what storage will serve) is the canonical form of what was checked.
	canonical := mime.FormatMediaType(mt, params)
	if canonical == "" {
		return "", "", invalidUpload("content_type", "content_type must be a MIME type such as image/png")
	}
	if IsActiveContent(mt) && !h.listed(mt) {
		return "", "", invalidUpload("content_type", "content_type "+mt+" is active content (a browser would run it) and is not accepted unless the operator lists it in allowed_content_types")
	}
	if len(h.AllowedContentTypes) == 0 {
		// The default: reference media only, by an allow-list (media_types.go).
		if !isMediaType(mt) {
			return "", "", invalidUpload("content_type", "content_type "+mt+" is not accepted here: upload images, videos or audio (image/png, video/mp4, audio/mpeg …) or application/octet-stream")
		}
		if !hasMediaExtension(filename) {
			return "", "", invalidUpload("filename", "filename must end in an image, video or audio extension (.png, .mp4, .mp3 …) or have none")
		}
	} else if !h.typeAllowed(mt) {
		return "", "", invalidUpload("content_type", "content_type "+mt+" is not accepted here; allowed: "+strings.Join(h.AllowedContentTypes, ", "))
	}
	return filename, canonical, nil
}

// listed reports whether allowed_content_types names the media type exactly (not by a
// wildcard).
func (h *Handler) listed(mediaType string) bool {
	for _, a := range h.AllowedContentTypes {
		if strings.EqualFold(strings.TrimSpace(a), mediaType) {
			return true
		}
	}
	return false
}

func (h *Handler) typeAllowed(mediaType string) bool {
	if len(h.AllowedContentTypes) == 0 {
		return true
	}
	for _, a := range h.AllowedContentTypes {
		a = strings.ToLower(a)
		if a == mediaType || (strings.HasSuffix(a, "/*") && strings.HasPrefix(mediaType, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// objectKey is prefix/<account segment>/<yyyy/mm/dd>/<random>[.ext]. The account segment is a
// hash, so public URLs do not reveal account names; the filename contributes only a safe,
// lowercase extension.
func (h *Handler) objectKey(account, filename string) string {
	sum := sha256.Sum256([]byte(account))
	var random [16]byte
	_, _ = rand.Read(random[:])
	key := h.Prefix + hex.EncodeToString(sum[:8]) + "/" + h.now().UTC().Format("2006/01/02") + "/" + hex.EncodeToString(random[:])
	if ext := strings.ToLower(strings.TrimPrefix(path.Ext(filename), ".")); extension.MatchString(ext) {
		key += "." + ext
	}
	return key
}

func (h *Handler) publicURL(key string) string {
	if h.PublicBaseURL != "" {
		return strings.TrimSuffix(h.PublicBaseURL, "/") + "/" + escapeKey(key)
	}
	return h.Storage.PublicURL(key)
}

func (h *Handler) expires() time.Duration {
	if h.Expires > 0 {
		return h.Expires
	}
	return DefaultExpires
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }
