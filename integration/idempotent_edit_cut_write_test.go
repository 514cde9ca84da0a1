package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An image edit with an Idempotency-Key whose client drops its connection while the answer
// (6 MB) is written. writeAnswer (answer_write.go) writes it in 64 KiB parts and stops at the
// first failed part, so the idempotency recorder copied only the parts written before: the
// key keeps a truncated 200 answer, which the retry gets replayed (Idempotent-Replayed: true),
// no valid JSON. (Before the parts, the one Write let the recorder copy the whole answer.)
func TestIdempotentEditCutWriteIsReplayedWhole(t *testing.T) {
	fake, base, _, _ := startAnswerMemoryGateway(t, oneShare("64MiB"), "64MiB", "image-async", 1)
	fake.answerEditsWith(&heldTask{answer: []byte(`{"created":1,"data":[{"b64_json":"` + strings.Repeat("iVBO", (6<<20)/4) + `"}]}`)})
	body := imageEditBody("image-async", 1, "1024x1024", "auto")
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(conn, "POST /v1/images/edits HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer mg-image-tasks\r\nContent-Type: application/json\r\nIdempotency-Key: edit-cut-write\r\nContent-Length: %d\r\n\r\n%s", host, len(body), body)
	head := make([]byte, 8<<10)
	_, _ = io.ReadAtLeast(conn, head, 1) // the answer has begun
	_ = conn.(*net.TCPConn).SetLinger(0)
	conn.Close() // the client drops the connection midway
	awaitHeldAnswers(t, 0, 0)
	time.Sleep(200 * time.Millisecond)

	req, _ := http.NewRequest(http.MethodPost, base+"/v1/images/edits", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer mg-image-tasks")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "edit-cut-write")
	retry, err := sendRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("retry: %d replayed=%q, %d bytes", retry.status, retry.header.Get("Idempotent-Replayed"), len(retry.body))
	if retry.status == http.StatusOK && !json.Valid(retry.body) {
		t.Fatalf("the retry of an edit whose answer's write was cut = 200 (Idempotent-Replayed %q), %d bytes of no JSON (of %d): a cut answer was kept and replayed",
			retry.header.Get("Idempotent-Replayed"), len(retry.body), 6<<20)
	}
}
