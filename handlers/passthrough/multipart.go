package passthrough

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/bounded"
)

// nameParam finds every name parameter of a Content-Disposition header as a lenient parser
// would: name or name*, quoted or not, whatever the case.
var nameParam = regexp.MustCompile(`(?i)(?:^|;)\s*(name\*?)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)`)

func multipartError(msg string) *apierror.Error {
	return apierror.New(http.StatusBadRequest, "invalid_request_body", msg).WithParam("model")
}

// multipartModel reads the whole multipart body, checks every part's name, and keeps a
// canonical re-encoding of the parts as it read them (see multipart_canonical.go) in a spool
// (memory up to SpoolMemory, then a temporary file, at most MaxSpool in all), which is what is
// forwarded and replayed. The body must have exactly one part named model, spelled so; a part
// whose name reads as model to a lenient parser (another case, name*, escapes) is refused, as is
// a second model part, and so is a part header folded onto a second line (see foldCheck).
func (rt *Router) multipartModel(w http.ResponseWriter, r *http.Request, ep Endpoint, boundary string, route *Route) (string, error) {
	if !plainBoundary(boundary) {
		return "", errBoundary
	}
	sp := &spool{memLimit: rt.SpoolMemory, maxSize: rt.MaxSpool, dir: rt.TempDir}
	if sp.memLimit <= 0 {
		sp.memLimit = DefaultSpoolMemory
	}
	if sp.maxSize <= 0 {
		sp.maxSize = DefaultMaxSpool
	}
	if r.ContentLength > sp.maxSize {
		return "", apierror.ErrTooLarge // declared too large: refused before spooling any of it
	}
	original := r.Body
	route.Done = func() { sp.Close() }
	// Nothing may come before the first boundary: a client that sends a preamble meant it for
	// some reader, and the gateway forwards none.
	fold := newFoldCheck(boundary)
	read := io.TeeReader(&bounded.Reader{R: original, Left: sp.maxSize, TooLarge: errSpoolFull}, fold)
	head := make([]byte, len(boundary)+2)
	if _, err := io.ReadFull(read, head); err != nil || string(head) != "--"+boundary {
		if errors.Is(err, errSpoolFull) {
			return "", apierror.ErrTooLarge
		}
		return "", multipartError("a multipart body must begin with its first boundary; nothing may come before it")
	}
	form := newCanonicalForm(sp)
	if idempotentCreate(r, route) {
		form.digest = newFormDigest()
		defer func() { route.bodyDigest = form.digest.sum() }()
	}
	var priced map[string]string
	if createsVideo(ep) {
		priced = map[string]string{}
	}
	model, err := scanParts(multipart.NewReader(io.MultiReader(bytes.NewReader(head), read), boundary), form, ep, priced)
	if err == nil && priced != nil {
		value := func(name string) (string, bool) { v, ok := priced[name]; return v, ok }
		route.Sizing.Video = videoSizing(value)
		err = oneVideo(value)
	}
	if err == nil {
		err = form.close()
	}
	if fold.err != nil {
		return "", fold.err
	}
	if errors.Is(err, errSpoolFull) {
		return "", apierror.ErrTooLarge
	}
	if err != nil {
		return "", err
	}
	replay, err := sp.reader()
	if err != nil {
		return "", err
	}
	r.Body = replayBody{Reader: replay, Closer: original}
	r.GetBody = func() (io.ReadCloser, error) { // a retry on another upstream sends it again
		rd, err := sp.reader()
		return io.NopCloser(rd), err
	}
	r.Header.Set("Content-Type", form.contentType())
	r.ContentLength = sp.size
	r.TransferEncoding = nil
	r.Header.Del("Content-Length")
	return model, nil
}

var errBoundary = apierror.New(http.StatusBadRequest, "invalid_request_body",
	"the multipart boundary must be 1 to 70 of the characters RFC 2046 allows (letters, digits and '()+_,-./:=?), without spaces").WithParam("Content-Type")

// plainBoundary reports whether a boundary keeps to RFC 2046's characters, without spaces:
// parsers then agree on it. A quoted-pair, a semicolon or a space in a quoted boundary is read
// differently by different parsers (one splits at --a"b, another at --a\"b), and parts hidden
// from the gateway's reading would be an upstream's.
func plainBoundary(b string) bool {
	if len(b) == 0 || len(b) > 70 {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("'()+_,-./:=?", c) >= 0) {
			return false
		}
	}
	return true
}

// scanParts reads every part, writes each to form in canonical form, and returns the model. Text
// parts are checked by the rules of ep's bodies (see checkTextPart).
//
// With priced not nil (a video create), the parts named by videoFormFields are read into it,
// trimmed; each may come once (upstreams' form readers differ on which of two they keep).
func scanParts(mr *multipart.Reader, form *canonicalForm, ep Endpoint, priced map[string]string) (string, error) {
	freeText, notFetched := ep.fetchRules()
	var model string
	var found bool
	var peek []byte // the start of a text part, one buffer for all
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			if !found {
				return "", errNoModel
			}
			return model, nil
		}
		if err != nil {
			return "", pass(err, errMultipart)
		}
		isModel, err := modelPart(part.Header)
		if err != nil {
			return "", err
		}
		header, name, file, err := canonicalPartHeader(part.Header)
		if err != nil {
			return "", err
		}
		if isModel && file {
			return "", multipartError("the model part must be a text field, without a filename")
		}
		if strings.EqualFold(strings.TrimSpace(name), methodField) {
			return "", errMethodOverride.WithParam(methodField)
		}
		out, err := form.part(header)
		if err != nil {
			return "", err
		}
		if !isModel {
			if peek == nil {
				peek = make([]byte, maxTextPartPeek)
			}
			var rest io.Reader = part
			if priced != nil && slices.Contains(videoFormFields, name) && !file {
				if _, seen := priced[name]; seen {
					return "", multipartError("the multipart body has more than one " + name + " part").WithParam(name)
				}
				value, err := io.ReadAll(io.LimitReader(part, maxPricedPartBytes+1))
				if err != nil {
					return "", pass(err, errMultipart)
				}
				if len(value) > maxPricedPartBytes {
					return "", multipartError("the form field " + name + " is too long").WithParam(name)
				}
				priced[name] = strings.TrimSpace(string(value))
				rest = io.MultiReader(bytes.NewReader(value), part)
			}
			content := io.TeeReader(rest, out) // what is checked is what is written
			if err := checkTextPart(name, file, content, peek, freeText, notFetched); err != nil {
				return "", err
			}
			if _, err := io.Copy(out, rest); err != nil {
				return "", pass(err, errMultipart)
			}
			continue
		}
		if found {
			return "", multipartError("the multipart body has more than one model part")
		}
		found = true
		value, err := io.ReadAll(io.LimitReader(part, maxModelFieldBytes+1))
		if err != nil {
			return "", pass(err, errMultipart)
		}
		if model, err = modelValue(value); err != nil {
			return "", err
		}
		if _, err := out.Write(value); err != nil {
			return "", err
		}
	}
}

// maxPricedPartBytes bounds a priced part's value (seconds, size ...); a longer one is refused,
// rather than held at a default its upstream may not read it as.
const maxPricedPartBytes = 64

// maxTextPartPeek is how much of a text part is read to tell whether it holds a URL: enough for
// any scheme and host, so a longer value is judged by its start.
const maxTextPartPeek = 4 << 10

// checkTextPart checks a part that is not a file as checkFetchedURLs checks a JSON string: some
// providers take a URL as a form field (the audio to transcribe, a video's reference), so a value
// that looks like a URL must be one the provider may fetch. Files are not checked, nor free text
// parts (prompt …) and the parts no provider fetches (user …), which are the endpoint's JSON
// members of those kinds, their names read as form encoders write nested members
// (formFieldPath: user[team] is under user). A part is a file only when it has a filename that
// is not empty (partIsFile): it is forwarded so, and a part with filename="" is forwarded as the
// text field it is to Go's form reader. The value is judged as the
// upstream reads it: a transfer encoding (quoted-printable, base64) would hide it and is refused,
// and leading whitespace, which form parsers trim, is skipped. It reads at most len(head) bytes
// of the value after that whitespace, into head.
func checkTextPart(name string, file bool, content io.Reader, head []byte, freeText []string, notFetched [][]string) error {
	if file {
		return nil
	}
	if path := formFieldPath(name); isFreeText(path, freeText) || under(path, notFetched) {
		return nil
	}
	n, err := readValueHead(content, head)
	if err != nil {
		return pass(err, errMultipart)
	}
	value := string(head[:n])
	if !media.LooksLikeURL(value) {
		return nil
	}
	if err := media.CheckPassThroughURL(value); err != nil {
		return apierror.New(http.StatusBadRequest, "invalid_request_body", "the form field "+name+" looks like a URL the provider may fetch, so it "+err.Error()).WithParam(name)
	}
	return nil
}

// readValueHead skips r's leading whitespace and control bytes, then reads up to len(head)
// bytes into head, and returns how many.
func readValueHead(r io.Reader, head []byte) (int, error) {
	for {
		n, err := io.ReadFull(r, head)
		end := err != nil // EOF, a short last read, or a failure
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, err
		}
		i := 0
		for i < n && head[i] <= ' ' {
			i++
		}
		if i == n {
			if end {
				return 0, nil
			}
			continue // all whitespace so far
		}
		n = copy(head, head[i:n])
		if end || i == 0 {
			return n, nil
		}
		m, err := io.ReadFull(r, head[n:])
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, err
		}
		return n + m, nil
	}
}

// plainTransferEncoding reports whether a part's value is sent as it is: no
// Content-Transfer-Encoding, or 7bit, 8bit or binary.
func plainTransferEncoding(h map[string][]string) bool {
	te := strings.ToLower(strings.TrimSpace(strings.Join(h["Content-Transfer-Encoding"], ",")))
	return te == "" || te == "7bit" || te == "8bit" || te == "binary"
}

// pass returns err when it is the spool's (413), else the given contract error.
func pass(err error, otherwise error) error {
	if errors.Is(err, errSpoolFull) {
		return err
	}
	return otherwise
}

// modelPart reports whether a part is the model field, refusing parts whose name could read as
// model to another parser but is not plainly name="model".
func modelPart(h map[string][]string) (bool, error) {
	cds := h["Content-Disposition"]
	if len(cds) == 0 {
		return false, nil
	}
	if len(cds) > 1 {
		return false, multipartError("a multipart part has more than one Content-Disposition header")
	}
	_, params, err := mime.ParseMediaType(cds[0])
	if err != nil {
		return false, multipartError("a multipart part has a malformed Content-Disposition header")
	}
	lenient := false
	for _, m := range nameParam.FindAllStringSubmatch(cds[0], -1) {
		lenient = lenient || looksLikeModel(m[1], m[2])
	}
	plain := params["name"] == "model" && len(nameParam.FindAllStringSubmatch(cds[0], -1)) == 1
	switch {
	case plain:
		if !plainTransferEncoding(h) {
			return false, multipartError("the model part may not have a Content-Transfer-Encoding")
		}
		return true, nil
	case lenient || strings.EqualFold(strings.TrimSpace(params["name"]), "model"):
		return false, multipartError("a multipart part is named like model but not exactly name=\"model\"; send the model once, as name=\"model\"")
	}
	return false, nil
}

// looksLikeModel decodes a name parameter leniently: quotes, backslashes, RFC 2231 charset and
// percent-encoding removed, spaces trimmed, case ignored.
func looksLikeModel(param, value string) bool {
	v := strings.TrimSpace(value)
	v = strings.Trim(v, `"`)
	v = strings.ReplaceAll(v, `\`, "")
	if strings.HasSuffix(param, "*") {
		if i := strings.LastIndex(v, "'"); i >= 0 {
			v = v[i+1:]
		}
	}
	if u, err := url.PathUnescape(v); err == nil {
		v = u
	}
	return strings.EqualFold(strings.TrimSpace(v), "model")
}

// modelValue checks the model part's value: plain text, exactly the model, nothing around it.
func modelValue(value []byte) (string, error) {
	if len(value) > maxModelFieldBytes || !utf8.Valid(value) {
		return "", multipartError("the model part must be a model id of at most 512 bytes of text")
	}
	model := string(value)
	if model == "" {
		return "", errNoModel
	}
	if strings.IndexFunc(model, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", multipartError("the model part must hold the model id alone, without spaces or line breaks")
	}
	return model, nil
}
