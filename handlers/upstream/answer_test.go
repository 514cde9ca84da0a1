package upstream

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"testing/iotest"

	"go.uber.org/zap"

	"github.com/mediagw/mediagw/handlers/providers"
)

// TestCallReadsTheWholeAnswer checks that Call answers the whole body of an answer of declared
// length and of one sent in chunks (length unknown), up to MaxBody, and that one past MaxBody,
// declared or not, is a 502: ErrTooLarge when the answer is a success (the provider did the
// work), else ErrUnreadable. A client with a MaxAnswer reads up to it instead.
func TestCallReadsTheWholeAnswer(t *testing.T) {
	const larger = MaxBody + 3<<20
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    error
		status  int
		max     int64 // the client's MaxAnswer
	}{
		{"empty", 0, false, nil, 0, 0},
		{"small", 17, false, nil, 0, 0},
		{"small in chunks", 17, true, nil, 0, 0},
		{"MaxBody", MaxBody, false, nil, 0, 0},
		{"MaxBody in chunks", MaxBody, true, nil, 0, 0},
		{"past MaxBody", MaxBody + 1, false, ErrTooLarge, 0, 0},
		{"past MaxBody in chunks", MaxBody + 1, true, ErrTooLarge, 0, 0},
		{"an error past MaxBody", MaxBody + 1, false, ErrUnreadable, http.StatusInternalServerError, 0},
		{"past MaxBody within MaxAnswer", MaxBody + 1, false, nil, 0, larger},
		{"past MaxBody within MaxAnswer in chunks", MaxBody + 1, true, nil, 0, larger},
		{"MaxAnswer", larger, false, nil, 0, larger},
		{"past MaxAnswer", larger + 1, false, ErrTooLarge, 0, larger},
		{"past MaxAnswer in chunks", larger + 1, true, ErrTooLarge, 0, larger},
		{"an error past MaxAnswer", larger + 1, true, ErrUnreadable, http.StatusBadRequest, larger},
		{"past a MaxAnswer below MaxBody", 1001, false, ErrTooLarge, 0, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := bytes.Repeat([]byte("a"), tc.size)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !tc.chunked {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				for rest := body; len(rest) > 0; {
					n := min(len(rest), 1000)
					w.Write(rest[:n])
					if tc.chunked {
						w.(http.Flusher).Flush()
					}
					rest = rest[n:]
				}
			}))
			defer up.Close()
			base, _ := url.Parse(up.URL)
			p := &providers.Provider{Name: "p", BaseURL: base, APIKey: "k"}
			c := Client{HTTP: NewHTTPClient(ClientOptions{}), Logger: zap.NewNop(), MaxAnswer: tc.max}
			ans, err := c.Call(context.Background(), p, http.MethodGet, "answer", nil)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == nil && !bytes.Equal(ans.Body, body) {
				t.Fatalf("body of %d bytes, want %d", len(ans.Body), len(body))
			}
		})
	}
}

// TestReadAnswerBeyondDeclaredLength checks readAnswer on bodies whose length differs from the
// declared one (a custom transport's): a longer one is read to its end, within MaxBody; one
// read a byte at a time is read whole.
func TestReadAnswerBeyondDeclaredLength(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100)
	for _, declared := range []int64{-1, 0, 1, 10, 999, 1000, 1001} {
		got, err := readAnswer(iotest.OneByteReader(bytes.NewReader(body)), declared, MaxBody, nil)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("declared %d: %d bytes, %v; want %d bytes", declared, len(got), err, len(body))
		}
	}
	long := make([]byte, MaxBody+1)
	if _, err := readAnswer(bytes.NewReader(long), 10, MaxBody, nil); !errors.Is(err, errAnswerTooLarge) {
		t.Fatalf("a body past MaxBody declared short: %v, want errAnswerTooLarge", err)
	}
	if _, err := readAnswer(bytes.NewReader(nil), MaxBody+1, MaxBody, nil); !errors.Is(err, errAnswerTooLarge) {
		t.Fatalf("a body declared past MaxBody: %v, want errAnswerTooLarge", err)
	}
}

// TestMaxAnswerBounded: a client's MaxAnswer past MaxAnswerLimit reads up to the limit (a
// MaxAnswer of math.MaxInt64 once overflowed readAnswer's bound into a panicking slice).
func TestMaxAnswerBounded(t *testing.T) {
	for _, c := range []struct{ max, want int64 }{{0, MaxBody}, {-5, MaxBody}, {1000, 1000},
		{MaxAnswerLimit, MaxAnswerLimit}, {MaxAnswerLimit + 1, MaxAnswerLimit}, {math.MaxInt64, MaxAnswerLimit}} {
		if got := (Client{MaxAnswer: c.max}).maxAnswer(); got != c.want {
			t.Errorf("MaxAnswer %d reads up to %d, want %d", c.max, got, c.want)
		}
	}
	body := bytes.Repeat([]byte("x"), 5000)
	got, err := readAnswer(iotest.OneByteReader(bytes.NewReader(body)), -1, (Client{MaxAnswer: math.MaxInt64}).maxAnswer(), nil)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("with MaxAnswer math.MaxInt64: %d bytes, %v", len(got), err)
	}
}
