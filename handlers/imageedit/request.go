package imageedit

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/media"
	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// Limits and enums of spec §2.6.
const (
	MaxImages = 15
	MaxN      = 10
)

var (
	enumSize = []string{"1024x1024", "1536x864", "864x1536", "1360x1024", "1024x1360", "1536x1024", "1024x1536",
		"2048x2048", "3072x1728", "1728x3072", "2720x2048", "2048x2720", "3072x2048", "2048x3072", "2880x2880",
		"3840x2160", "2160x3840", "3328x2496", "2496x3328", "3520x2336", "2336x3520"}
	enumQuality      = []string{"auto", "low", "medium", "high"}
	enumOutputFormat = []string{"jpeg", "png", "webp"}
	enumModeration   = []string{"auto", "low"}
	enumResponse     = []string{"url"}
)

// Checked fields of an edit body (spec §2.6) and of an images item. Their keys follow jsonkeys'
// rule: no repeats, no case variants.
var (
	editFields  = []string{"model", "prompt", "images", "mask", "n", "size", "quality", "output_format", "moderation", "response_format"}
	imageFields = []string{"image_url", "file_id"}
	// checkedFields are editFields and the extensions' names (forward.go): every field that is
	// forwarded.
	checkedFields = func() []string {
		names := slices.Clone(editFields)
		for _, e := range extensions {
			names = append(names, e.name)
		}
		return names
	}()
)

var errMissingModel = apierror.New(http.StatusBadRequest, "missing_model", "model is required").WithParam("model")

// checkKeys applies jsonkeys' rule to the object raw at param ("" for the body). A broken rule is
// 400 invalid_request naming the field; data that is not an object is left to the caller.
func checkKeys(raw []byte, param string, fields ...string) error {
	err := jsonkeys.Check(raw, fields...)
	if e, ok := errors.AsType[*jsonkeys.Error](err); ok {
		field := e.Field
		if param != "" {
			field = param + "." + field
		}
		return invalid(field, "is refused: %v", e)
	}
	return nil
}

func invalid(param, format string, a ...any) *apierror.Error {
	return apierror.New(http.StatusBadRequest, "invalid_request", param+" "+fmt.Sprintf(format, a...)).WithParam(param)
}

// ParseEdit validates an image edit body (spec §2.6) and returns its model and the body to send
// upstream, built anew from what was checked (forwardBody): the contract's fields and the
// provider extensions (forward.go), n as the plain integer checked, each image and the mask as
// their checked image_url alone. Fields it does not know are not forwarded; a URL-like string in
// them must still pass media.Unread (unread.go). JSON null counts as an absent field. A failure
// is a 400 *apierror.Error whose Param names the field; a missing, null or empty model is
// missing_model, as on the task API.
func ParseEdit(body []byte) (model string, forward []byte, err error) {
	if err := checkKeys(body, "", checkedFields...); err != nil {
		return "", nil, err // a key that is not UTF-8 is named here
	}
	if !utf8.Valid(body) {
		return "", nil, apierror.NotUTF8("invalid_request_body")
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return "", nil, apierror.NotJSONObject("invalid_request_body")
	}
	for k, v := range f {
		if string(v) == "null" {
			delete(f, k)
		}
	}
	var prompt string
	if raw, ok := f["model"]; !ok {
		return "", nil, errMissingModel
	} else if json.Unmarshal(raw, &model) != nil {
		return "", nil, invalid("model", "must be a string")
	} else if model == "" {
		return "", nil, errMissingModel
	}
	if err := nonEmpty(f, "prompt", &prompt); err != nil {
		return "", nil, err
	}
	var unread media.Unread
	images, err := checkImages(&unread, f["images"])
	if err != nil {
		return "", nil, err
	}
	var mask string
	if raw, ok := f["mask"]; ok {
		if mask, err = checkImage(&unread, raw, "mask"); err != nil {
			return "", nil, err
		}
	}
	if err := checkUnread(&unread, body, "", checkedFields...); err != nil {
		return "", nil, err
	}
	var n int64
	if raw, ok := f["n"]; ok {
		if n, ok = jsonkeys.Integer(raw); !ok || n < 1 || n > MaxN {
			return "", nil, invalid("n", "must be an integer from 1 to %d", MaxN)
		}
	}
	for name, allowed := range map[string][]string{
		"size": enumSize, "quality": enumQuality, "output_format": enumOutputFormat,
		"moderation": enumModeration, "response_format": enumResponse,
	} {
		if raw, ok := f[name]; ok {
			var s string
			if json.Unmarshal(raw, &s) != nil || !slices.Contains(allowed, s) {
				return "", nil, invalid(name, "must be one of %s", strings.Join(allowed, ", "))
			}
		}
	}
	if err := checkExtensions(f); err != nil {
		return "", nil, err
	}
	if forward, err = forwardBody(f, n, images, mask); err != nil {
		return "", nil, err
	}
	return model, forward, nil
}

func nonEmpty(f map[string]json.RawMessage, name string, dst *string) error {
	raw, ok := f[name]
	if !ok {
		return invalid(name, "is required")
	}
	if json.Unmarshal(raw, dst) != nil {
		return invalid(name, "must be a string")
	}
	if strings.TrimSpace(*dst) == "" {
		return invalid(name, "must not be empty")
	}
	return nil
}

// checkImages checks the images array and returns each item's checked image_url.
func checkImages(u *media.Unread, raw json.RawMessage) ([]string, error) {
	if raw == nil {
		return nil, invalid("images", "is required: give 1 to %d public image URLs", MaxImages)
	}
	var images []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &images); err != nil {
		return nil, invalid("images", "must be an array of objects with image_url")
	}
	if len(images) < 1 || len(images) > MaxImages {
		return nil, invalid("images", "must have 1 to %d items", MaxImages)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("images", "must be an array of objects with image_url")
	}
	urls := make([]string, len(items))
	for i := range images {
		url, err := checkImage(u, items[i], fmt.Sprintf("images[%d]", i))
		if err != nil {
			return nil, err
		}
		urls[i] = url
	}
	return urls, nil
}

// checkImage checks one image object, an images item or the mask: {"image_url": "<public URL>"}.
// A file_id is refused: files cannot be uploaded through the gateway, so one would name a file of
// the operator's upstream account that is not the caller's. Its other fields are checked with u
// (checkUnread), and are not forwarded. It returns the checked URL.
func checkImage(u *media.Unread, raw json.RawMessage, param string) (string, error) {
	if err := checkKeys(raw, param, imageFields...); err != nil {
		return "", err
	}
	var img map[string]json.RawMessage
	if json.Unmarshal(raw, &img) != nil {
		img = nil
	}
	if _, ok := img["file_id"]; ok {
		return "", invalid(param+".file_id", "is not accepted: give the image as a public image_url")
	}
	var url string
	if img == nil || json.Unmarshal(img["image_url"], &url) != nil {
		return "", invalid(param+".image_url", "is required and must be a string")
	}
	if err := media.CheckMediaURL(url); err != nil {
		return "", invalid(param+".image_url", "%v", err)
	}
	return url, checkUnread(u, raw, param, imageFields...)
}
