package storage_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// A password is hidden whole wherever the URL is shown, also when it holds an @ (which URL
// parsers, Go's and so the client's included, read up to the last @ of the authority), is
// percent-encoded, or when the query holds an @ of its own.
func TestRedactURLHidesTheWholePassword(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"rediss://user:pw@host:6380/0", "rediss://user:xxxxx@host:6380/0"},
		{"redis://u:p@ss@host:6379/0", "redis://u:xxxxx@host:6379/0"},
		{"redis://:s3cr@t!@host:6379", "redis://:xxxxx@host:6379"},
		{"redis://u:pa%40ss@host", "redis://u:xxxxx@host"},
		{"rediss://u:pw@h/0?addr=x@y:1", "rediss://u:xxxxx@h/0?addr=x@y:1"},
		{"redis://h:6379/0?addr=x@y:1", "redis://h:6379/0?addr=x@y:1"},
		{"redis://user@h:6379", "redis://user@h:6379"},
	} {
		if got := storage.RedactURL(tc.raw); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
	// A password with a /, ? or # that was not percent-encoded makes the URL unparsable (the
	// authority ends early); nothing of it is shown either.
	for _, raw := range []string{"redis://u:pa/ss@host:6379", "redis://u:pa?ss@host:6379", "redis://u:pa#ss@host:6379", "redis://:pa/ss@host"} {
		if got := storage.RedactURL(raw); strings.Contains(got, ":pa") || strings.Contains(got, "ss@") {
			t.Errorf("RedactURL(%q) = %q", raw, got)
		}
		_, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: raw})
		if err == nil || strings.Contains(err.Error(), "pa/ss") || strings.Contains(err.Error(), "pa?ss") || strings.Contains(err.Error(), "pa#ss") || strings.Contains(err.Error(), "ss@") || strings.Contains(err.Error(), ":pa") {
			t.Errorf("OpenRedis(%q) error = %v; want one without the password", raw, err)
		}
	}
	// An error of OpenRedis names the URL without any part of the password.
	_, err := storage.OpenRedis(context.Background(), storage.RedisOptions{URL: "redis://u:hunter@2secret@127.0.0.1:1/0", TLS: &tls.Config{}})
	if err == nil || strings.Contains(err.Error(), "2secret") || strings.Contains(err.Error(), "hunter") {
		t.Fatalf("OpenRedis error = %v; want one without the password", err)
	}
}
