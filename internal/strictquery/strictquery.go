// Package strictquery reads the query of an admin request (the ledger, the lists, the usage
// report) so that what is answered is exactly what was asked for.
package strictquery

import (
	"errors"
	"net/url"
)

// Read decodes raw, a URL's raw query. A query that does not decode (a bad escape such as %zz,
// a ';') and a parameter of once given more than once (Go's Query keeps the first, other
// servers the last) are each an error naming the fault, to be answered with 400, instead of a
// page or report other than the one asked for. Parameters not in once are left alone.
func Read(raw string, once ...string) (url.Values, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil, errors.New("the query does not decode: " + err.Error())
	}
	for _, name := range once {
		if len(v[name]) > 1 {
			return nil, errors.New(name + " is given more than once in the query; give it once")
		}
	}
	return v, nil
}
