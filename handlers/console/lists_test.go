package console

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

var (
	keyCell  = regexp.MustCompile(`<td><code>(key_[^<]+)</code></td><td>([^<]*)</td>`)
	acctLink = regexp.MustCompile(`<tr><td><a href="/accounts/[^"]*">([^<]+)</a>`)
	relLink  = regexp.MustCompile(`<a href="([^"]+)" rel="(prev|next)">`)
)

// walk follows a list's next links from first to the end, then its previous links back to the
// start, and returns what each way showed (cells picks the rows of a page).
func (c *testConsole) walk(first, cookie string, cells func(page string) []string) (forwards, backwards []string) {
	c.t.Helper()
	links := func(page string) map[string]string {
		m := map[string]string{}
		for _, l := range relLink.FindAllStringSubmatch(page, -1) {
			m[l[2]] = html.UnescapeString(l[1])
		}
		return m
	}
	uri, last := first, ""
	for range 20 {
		resp, page := c.request(http.MethodGet, uri, cookie, nil, nil)
		if resp.StatusCode != http.StatusOK {
			c.t.Fatalf("GET %s = %d", uri, resp.StatusCode)
		}
		forwards = append(forwards, cells(page)...)
		next, ok := links(page)["next"]
		if !ok {
			last = page
			break
		}
		uri = next
	}
	backwards = cells(last)
	for page := last; ; {
		prev, ok := links(page)["prev"]
		if !ok {
			break
		}
		resp, p := c.request(http.MethodGet, prev, cookie, nil, nil)
		if resp.StatusCode != http.StatusOK {
			c.t.Fatalf("GET %s = %d", prev, resp.StatusCode)
		}
		backwards = append(cells(p), backwards...)
		page = p
	}
	return forwards, backwards
}

// The keys and accounts pages show listPageSize rows a page with next and previous links that
// cover the whole list each way; a member's keys page holds their account's keys whatever
// account or cursor the query names.
func TestListPagesAndTheirLinks(t *testing.T) {
	c := newTestConsole(t, bcryptTestCost)
	var acme, all []string
	for i := range listPageSize*2 + 7 {
		acct, id := "acme", fmt.Sprintf("key_%03d", i)
		if i%4 == 3 {
			acct = fmt.Sprintf("beta%03d", i)
		}
		if _, err := c.h.Store.CreateKey(t.Context(), storage.APIKey{ID: id, Hash: storage.HashSecret(id), Account: acct}); err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
		if acct == "acme" {
			acme = append(acme, id)
		}
	}
	keysOf := func(account string) func(string) []string {
		return func(page string) []string {
			var ids []string
			for _, m := range keyCell.FindAllStringSubmatch(page, -1) {
				if account != "" && m[2] != account {
					t.Fatalf("a page of %s's keys shows %s of %s", account, m[1], m[2])
				}
				ids = append(ids, m[1])
			}
			if len(ids) > listPageSize {
				t.Fatalf("a page shows %d keys", len(ids))
			}
			return ids
		}
	}
	admin, alice := c.login("admin"), c.login("alice")
	fw, bw := c.walk("/keys", admin, keysOf(""))
	if !slices.Equal(fw, all) || !slices.Equal(bw, all) {
		t.Fatalf("the operator's keys, forwards %d, backwards %d; want %d", len(fw), len(bw), len(all))
	}
	if fw, bw := c.walk("/keys?account=acme", admin, keysOf("acme")); !slices.Equal(fw, acme) || !slices.Equal(bw, acme) {
		t.Fatalf("the operator's pages of acme's keys, forwards %v, backwards %v; want %v", fw, bw, acme)
	}
	for _, start := range []string{"/keys", "/keys?account=beta003", "/keys?account=beta003&after=key_000", "/keys?before=key_004&account="} {
		fw, _ := c.walk(start, alice, keysOf("acme"))
		if start == "/keys" && !slices.Equal(fw, acme) {
			t.Fatalf("alice's keys from %s: %v; want %v", start, fw, acme)
		}
	}
	fw, bw = c.walk("/accounts", admin, func(page string) []string {
		var names []string
		for _, m := range acctLink.FindAllStringSubmatch(page, -1) {
			names = append(names, m[1])
		}
		return names
	})
	if len(fw) != 1+(listPageSize*2+7)/4 || fw[0] != "acme" || !slices.Equal(fw, bw) || !slices.IsSorted(fw) {
		t.Fatalf("accounts forwards %v, backwards %v", fw, bw)
	}
	// The overview shows the first overviewAccounts accounts and links to the rest.
	_, page := c.request(http.MethodGet, "/", admin, nil, nil)
	if shown := acctLink.FindAllStringSubmatch(page, -1); len(shown) != overviewAccounts ||
		!strings.Contains(page, `<a href="/accounts?after=`+fw[overviewAccounts-1]+`">More accounts</a>`) {
		t.Fatalf("the overview shows %d accounts, or no link to the rest", len(shown))
	}
	// A member's accounts list is their own account's page.
	if resp, _ := c.request(http.MethodGet, "/accounts?after=a", alice, nil, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/accounts/acme" {
		t.Fatalf("alice's /accounts = %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}
