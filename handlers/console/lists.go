package console

import (
	"net/http"
	"net/url"

	"github.com/mediagw/mediagw/storage"
)

// listPageSize is how many keys or accounts a list page shows. A page reads that many records
// through the store's indexes (and one more, to know whether another page follows), however
// many keys and accounts the store holds.
const listPageSize = 50

// pager holds the links of a paged list: to its first page, and to the pages before and after
// the one shown ("" for none).
type pager struct {
	First, Prev, Next string
}

// listQuery reads the cursor of a list page from the request: after (the last id or name of
// the page before) or before (the first of the page after); after wins when both are given.
func listQuery(r *http.Request) storage.DirectoryPage {
	q := storage.DirectoryPage{After: r.URL.Query().Get("after"), Before: r.URL.Query().Get("before"), Limit: listPageSize}
	if q.After != "" {
		q.Before = ""
	}
	return q
}

// makePager links the pages around one read by q, whose cursors are prev and next: each link is
// path with the fixed query and the cursor.
func makePager(path string, fixed url.Values, q storage.DirectoryPage, prev, next string) pager {
	link := func(name, cursor string) string {
		v := url.Values{}
		for k, vals := range fixed {
			if len(vals) > 0 && vals[0] != "" {
				v[k] = vals
			}
		}
		if name != "" {
			v.Set(name, cursor)
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	var p pager
	if q.After != "" || q.Before != "" {
		p.First = link("", "")
	}
	if prev != "" {
		p.Prev = link("before", prev)
	}
	if next != "" {
		p.Next = link("after", next)
	}
	return p
}
