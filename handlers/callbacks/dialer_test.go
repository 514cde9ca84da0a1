package callbacks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDialerRefusesPrivateAddressesAtDialTime(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// "localhost" resolves to loopback: the name passes any URL check, the dial must not.
	for _, host := range []string{"127.0.0.1", "localhost", "[::ffff:127.0.0.1]"} {
		_, err := Dialer(false)(ctx, "tcp", net.JoinHostPort(trimBrackets(host), port))
		var np ErrNotPublic
		if !errors.As(err, &np) {
			t.Errorf("dial %s: err = %v, want ErrNotPublic", host, err)
		}
	}
	c, err := Dialer(true)(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatalf("with private callbacks allowed: %v", err)
	}
	c.Close()
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' {
		return h[1 : len(h)-1]
	}
	return h
}

func TestSignAndVerify(t *testing.T) {
	secret := NewSecret()
	key, err := ParseSecret(secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	body := []byte(`{"id":"cgt-1","status":"running"}`)
	sig := Sign(key, "msg_1", now, body)
	ts := now.Unix()
	if err := Verify(secret, "msg_1", itoa(ts), "v1,bogus "+sig, body, time.Minute); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if Verify(secret, "msg_1", itoa(ts), sig, []byte(`{"id":"cgt-1","status":"failed"}`), time.Minute) == nil {
		t.Fatal("a changed body verified")
	}
	if Verify(secret, "msg_2", itoa(ts), sig, body, time.Minute) == nil {
		t.Fatal("another id verified")
	}
	if Verify(secret, "msg_1", itoa(ts-3600), Sign(key, "msg_1", now.Add(-time.Hour), body), body, time.Minute) == nil {
		t.Fatal("an old timestamp verified")
	}
	if AccountSecret(key, "a") == AccountSecret(key, "b") || AccountSecret(key, "a") != AccountSecret(key, "a") {
		t.Fatal("account secrets must differ per account and be stable")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A client made with another attempt limit gives up on a receiver that does not answer within
// it, rather than after the default 10 s.
func TestClientAttemptTimeout(t *testing.T) {
	release := make(chan struct{})
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer rc.Close()
	defer close(release) // runs first: a held handler returns before the server closes
	c := NewClientTimeout(true, 200*time.Millisecond)
	if c.Timeout != 200*time.Millisecond {
		t.Fatalf("client timeout = %v", c.Timeout)
	}
	done := make(chan error, 1)
	go func() {
		resp, err := c.Post(rc.URL, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a receiver that never answers was answered")
		}
	case <-time.After(DefaultAttemptTimeout / 2):
		// 25 times the limit, and still less than the default a client without it would have.
		t.Fatal("the attempt was not cut at its limit")
	}
}
