package keyadmin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// The admin API's key and account lists come a page at a time, stored and configured keys
// merged in order of id, the next page's cursor in ListNextHeader; an account's list holds its
// keys only; a limit out of range is a 400 with the admin API's {"error": ...} body.
func TestListsArePaged(t *testing.T) {
	store, err := storage.OpenBadger(t.TempDir(), storage.BadgerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h := &Handler{Store: store,
		Static:           map[string]storage.APIKey{"key_cfg": {ID: "key_cfg", Account: "cfg"}},
		DisabledAccounts: map[string]bool{"zz-off": true}}
	for i := range 7 {
		id := fmt.Sprintf("key_%02d", i)
		if _, err := store.CreateKey(t.Context(), storage.APIKey{ID: id, Hash: storage.HashSecret(id), Account: fmt.Sprint("acct", i%2)}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(uri string) (ids []string, next string, status int) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, uri, nil))
		if rec.Code != http.StatusOK {
			return nil, "", rec.Code
		}
		var items []struct{ ID, Name string }
		if err := json.Unmarshal(rec.Body.Bytes(), &items); err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			ids = append(ids, it.ID+it.Name)
		}
		return ids, rec.Header().Get(ListNextHeader), rec.Code
	}
	var all []string
	for uri := "/mediagw/keys?limit=3"; ; {
		ids, next, status := get(uri)
		if status != http.StatusOK || len(ids) > 3 {
			t.Fatalf("%s: status %d, %v", uri, status, ids)
		}
		all = append(all, ids...)
		if next == "" {
			break
		}
		uri = "/mediagw/keys?limit=3&after=" + next
	}
	if strings.Join(all, " ") != "key_00 key_01 key_02 key_03 key_04 key_05 key_06 key_cfg" {
		t.Fatalf("every page of keys: %v", all)
	}
	if ids, next, _ := get("/mediagw/keys?account=acct1"); strings.Join(ids, " ") != "key_01 key_03 key_05" || next != "" {
		t.Fatalf("acct1's keys: %v, next %q", ids, next)
	}
	if ids, next, _ := get("/mediagw/accounts?limit=2"); strings.Join(ids, " ") != "acct0 acct1" || next != "acct1" {
		t.Fatalf("first accounts: %v, next %q", ids, next)
	}
	if ids, next, _ := get("/mediagw/accounts?after=acct1"); strings.Join(ids, " ") != "cfg zz-off" || next != "" {
		t.Fatalf("accounts after acct1: %v, next %q", ids, next)
	}
	for _, uri := range []string{"/mediagw/keys?limit=0", "/mediagw/keys?limit=1001", "/mediagw/accounts?limit=x", "/mediagw/keys?after=a&before=b"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, uri, nil))
		var e struct{ Error string }
		if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error == "" || rec.Header().Get(ListNextHeader) != "" {
			t.Fatalf("%s: status %d, body %s, want 400 with an error message", uri, rec.Code, rec.Body)
		}
	}
}
