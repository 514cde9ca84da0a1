package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"slices"
)

// requestHash is what a retry must match: the method, the path and the body. A multipart/form-data
// body counts by its parts (each part's headers and content, in order), not
// by its bytes: a client sends the same form again with a new boundary (the Node SDKs' fetch draws
// one at each send), and that retry is the same request. A form that does not parse counts by
// its bytes (it is refused later anyway).
func requestHash(method, path, contentType string, body []byte) string {
	if parts, ok := formParts(contentType, body); ok {
		return HashOf(method, path, formTag, parts)
	}
	if bytes.HasPrefix(body, []byte(formTag+"\x00")) || bytes.HasPrefix(body, []byte(rawTag+"\x00")) {
		// A body that begins as a form's framing does (or as this one) would hash as that form:
		// it is hashed behind a tag of its own. Every other body hashes as it always has, so
		// answers kept before this rule still match their retries.
		return HashOf(method, path, rawTag, body)
	}
	return HashOf(method, path, body)
}

// The tags that set a form's parts, and a raw body that could pass for them, apart.
const (
	formTag = "multipart/form-data"
	rawTag  = "raw"
)

// formParts returns a multipart/form-data body's parts, each length-prefixed so that no two
// different forms give the same bytes, and whether body is such a form.
func formParts(contentType string, body []byte) ([]byte, bool) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, false
	}
	var out bytes.Buffer
	field := func(b []byte) {
		out.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		out.Write(b)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return out.Bytes(), true
		}
		if err != nil {
			return nil, false
		}
		content, err := io.ReadAll(p)
		if err != nil {
			return nil, false
		}
		// Every header of the part counts, not only its name, filename and Content-Type: a
		// Content-Transfer-Encoding, say, changes what a decoder reads from the same bytes.
		names := slices.Sorted(maps.Keys(p.Header))
		field(binary.BigEndian.AppendUint64(nil, uint64(len(names))))
		for _, name := range names {
			field([]byte(name))
			field(binary.BigEndian.AppendUint64(nil, uint64(len(p.Header[name]))))
			for _, v := range p.Header[name] {
				field([]byte(v)) // each value apart: no separator a value could hold
			}
		}
		field(content)
	}
}

// HashOf is the hex SHA-256 of parts (strings and byte slices), each followed by a zero byte: a
// request hash for Guard.Run from a caller that reads its request's parts itself. Only the last
// part may hold a zero byte, or two different lists could give the same hash.
func HashOf(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			h.Write([]byte(v))
		case []byte:
			h.Write(v)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
