package imageedit

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// An edit reaches its provider as exactly what was checked (DESIGN §7): the body sent is built
// anew from the contract's fields (spec §2.6) and the provider extensions below, each checked
// for its type and range, with every images item and the mask as {"image_url": <the checked
// URL>}. A field that is neither is not forwarded, and neither is a member of an images item or
// of the mask other than image_url: no string the gateway did not read (a bare Base64 image, a
// local path, an address under another name) reaches a provider. A URL-like string in such a
// field is still refused (checkUnread), so that an image given where the gateway does not read
// one is an error rather than silently lost.

// An extension is a field that the contract does not name but that providers of image edits
// document, forwarded when it passes its check.
type extension struct {
	name  string
	check func(raw json.RawMessage) bool
	rule  string // what the 400 says the field must be
}

// extensions are OpenAI's image edit fields beyond the contract's (background, input_fidelity,
// output_compression, partial_images, stream, user) and Ark Seedream's (seed, watermark).
var extensions = []extension{
	{"background", enumOf("transparent", "opaque", "auto"), "one of transparent, opaque, auto"},
	{"input_fidelity", enumOf("high", "low"), "one of high, low"},
	{"output_compression", integerIn(0, 100), "an integer from 0 to 100"},
	{"partial_images", integerIn(0, 3), "an integer from 0 to 3"},
	{"stream", isBool, "a boolean"},
	{"user", stringUpTo(maxUser), "a string of at most 256 bytes"},
	{"seed", integerIn(-1, math.MaxInt32), "an integer from -1 to 2147483647"},
	{"watermark", isBool, "a boolean"},
}

// maxUser bounds the end-user identifier forwarded as user.
const maxUser = 256

// checkExtensions checks the extension fields of f (a field given as null is absent).
func checkExtensions(f map[string]json.RawMessage) error {
	for _, e := range extensions {
		if raw, ok := f[e.name]; ok && !e.check(raw) {
			return invalid(e.name, "must be %s", e.rule)
		}
	}
	return nil
}

// forwardBody is the body sent upstream: of f (the checked body, nulls removed), the contract's
// fields and the extensions, n as the plain integer checked, images and mask rebuilt from their
// checked URLs (mask "" when absent). Its keys are sorted; it is written without HTML escaping.
func forwardBody(f map[string]json.RawMessage, n int64, images []string, mask string) ([]byte, error) {
	out := make(map[string]any, len(f))
	for _, name := range editFields {
		if raw, ok := f[name]; ok {
			out[name] = raw
		}
	}
	for _, e := range extensions {
		if raw, ok := f[e.name]; ok {
			out[e.name] = raw
		}
	}
	items := make([]imageRef, len(images))
	for i, u := range images {
		items[i] = imageRef{ImageURL: u}
	}
	out["images"] = items
	if mask != "" {
		out["mask"] = imageRef{ImageURL: mask}
	}
	if n > 0 {
		out["n"] = n
	}
	return apierror.Marshal(out)
}

// imageRef is an image as forwarded: its checked URL alone.
type imageRef struct {
	ImageURL string `json:"image_url"`
}

func enumOf(allowed ...string) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var s string
		return json.Unmarshal(raw, &s) == nil && slices.Contains(allowed, s)
	}
}

func integerIn(lo, hi int64) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		n, ok := jsonkeys.Integer(raw)
		return ok && n >= lo && n <= hi
	}
}

func isBool(raw json.RawMessage) bool { return string(raw) == "true" || string(raw) == "false" }

func stringUpTo(max int) func(json.RawMessage) bool {
	return func(raw json.RawMessage) bool {
		var s string
		return json.Unmarshal(raw, &s) == nil && len(s) <= max
	}
}
