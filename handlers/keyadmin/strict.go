package keyadmin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/internal/jsonkeys"
	"github.com/mediagw/mediagw/internal/strictquery"
)

// strictQuery reads the query of an admin API request under strictObject's rule (see
// strictquery.Read): a query that does not decode and a parameter of names given more than once
// are each a 400 naming the fault, instead of a page other than the one asked for.
func strictQuery(r *http.Request, names ...string) (url.Values, error) {
	v, err := strictquery.Read(r.URL.RawQuery, names...)
	if err != nil {
		return nil, fail(http.StatusBadRequest, err.Error())
	}
	return v, nil
}

// strictObject reads data, a JSON object of the admin API, under the rule that what is acted on
// is exactly what was checked: each member is one of fields, spelled exactly so, and given once.
// A repeated member (Go's encoding/json keeps the last, other decoders the first), a member that
// differs from a field only by letter case (encoding/json would take it for the field) and an
// unknown member are each an error naming the member. what names the object in those errors
// ("the body", "budget"). The values are slices of data.
//
// The body's text must be Unicode as sent (checkText): not UTF-8, or holding an escaped lone
// surrogate, it is refused before encoding/json would read either as U+FFFD.
func strictObject(data []byte, what string, fields ...string) (map[string]json.RawMessage, error) {
	if what == "the body" {
		if err := checkText(data); err != nil {
			return nil, err
		}
	}
	members, err := jsonkeys.All(data, fields...)
	if errors.Is(err, jsonkeys.ErrNotObject) {
		if what == "the body" {
			return nil, errors.New(apierror.MsgNotJSONObject)
		}
		return nil, fmt.Errorf("%s must be a JSON object", what)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var unknown []string
	for name := range members {
		if !slices.Contains(fields, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		quoted := make([]string, len(fields))
		for i, f := range fields {
			quoted[i] = strconv.Quote(f)
		}
		return nil, fmt.Errorf("%s: unknown member %s; the members are %s", what, strconv.Quote(unknown[0]), strings.Join(quoted, ", "))
	}
	return members, nil
}
