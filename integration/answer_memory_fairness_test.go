package integration

// answer_memory is shared fairly: a client that stops reading, edits waiting on their provider,
// and an answer's copies cannot keep the other requests of the gateway out of it.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/imageedit"
)

// TestStalledReaderDoesNotHoldAnswerMemory: a client queries a task whose answer is 60 MB and
// then reads nothing. The gateway holds the answer (60 MB of answer_memory 64 MiB) while it
// writes it; the write makes no progress, and within its stall bound (10 s, see
// imageedit/answer_write.go) the gateway gives it up and the bytes back: twenty seconds later an
// image edit is served. (Before, the write had no deadline: every image edit and large query of
// every account was 503 gateway_busy for as long as the client kept its connection open.)
func TestStalledReaderDoesNotHoldAnswerMemory(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, _, ids := startAnswerMemoryGateway(t, oneShare("64MiB"), "64MiB", "image-async", 1)
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 60<<20, "")})

	conn := queryAndStall(t, base, ids[0])
	awaitHeldAnswers(t, 60<<20, 61<<20) // read, and being written to a client that reads nothing

	time.Sleep(20 * time.Second)
	edits := fake.edited()
	edit := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("image-async", 2, "1024x1024", "auto"))
	if code, _ := errorCodeAndShape(edit); edit.status == http.StatusServiceUnavailable {
		t.Fatalf("a client that has read nothing for 20 s still holds the answer budget: an edit = %d %s (sent: %v)",
			edit.status, code, fake.edited() != edits)
	}
	conn.Close()
	awaitHeldAnswers(t, 0, 0)
}

// TestEditsInFlightAreNotCappedByTheirReservation: two edits wait on their provider (as image
// edits do, for tens of seconds), their answers a 60-byte URL each. Each holds only its small
// reservation (imageedit.EditAnswerReserve) while it waits, not a part of answer_memory (16 MiB)
// sized for large answers: a third edit and a query of a task are served. (Before, each edit
// reserved 8 MiB: two of them refused every other edit and query of every account.)
func TestEditsInFlightAreNotCappedByTheirReservation(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, _, ids := startAnswerMemoryGateway(t, oneShare("16MiB"), "16MiB", "image-async", 1)
	before := make(chan struct{})
	fake.answerEditsWith(&heldTask{answer: []byte(`{"created":1,"data":[{"url":"https://img.example/a.png"}]}`), before: before})
	edited, sent := make(chan response, 3), fake.edited()
	for range 3 {
		go func() {
			r, err := send(http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("image-async", 1, "1024x1024", "auto"))
			if err != nil {
				r.status = -1
			}
			edited <- r
		}()
	}
	gateOpen := false
	defer func() {
		if !gateOpen {
			close(before)
		}
	}()
	// The three edits reserved, and wait on the provider; no answer has come.
	awaitHeldAnswers(t, 3*imageedit.EditAnswerReserve, 3*imageedit.EditAnswerReserve)
	for deadline := time.Now().Add(30 * time.Second); fake.edited()-sent != 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("with two edits in flight and no answer byte held, the provider got %d edits, want 3", fake.edited()-sent)
		}
	}
	query := call(t, http.MethodGet, base+"/v1/images/tasks/"+ids[0], "mg-image-tasks", nil) // a 45-byte answer
	close(before)
	gateOpen = true
	for range 3 {
		if r := <-edited; r.status != http.StatusOK {
			t.Errorf("an edit, two others in flight = %d %.200s", r.status, r.body)
		}
	}
	if query.status != http.StatusOK {
		t.Fatalf("a query of a task answered in 45 bytes, three edits in flight = %d %.200s", query.status, query.body)
	}
	awaitHeldAnswers(t, 0, 0)
}

// TestAnswerWithinMaxAnswerServedOnAnIdleGateway: answer_memory 64 MiB and max_answer 64 MiB, a
// config the gateway loads ("an answer of max_answer must fit answer_memory"). On an idle
// gateway, a 40 MB answer of the aliased model edit-async (model_map), which names no model and
// quotes no key, is counted twice (the read, and a copy for ReplaceModel taken before it is
// known whether any copy is made): 80 MB, past 64 MiB. A query of the task is then 503
// gateway_busy with Retry-After: 1 every time (a retry can never succeed), and an edit answered
// so is 502 and charged its estimate every time (each retry pays again). Before the branch both
// were served.
func TestAnswerWithinMaxAnswerServedOnAnIdleGateway(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, oneShare("64MiB"), "64MiB", "edit-async", 1)
	awaitBalance(t, g, "painters", "4.66", "0.34")
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 40<<20, "")})
	q := call(t, http.MethodGet, base+"/v1/images/tasks/"+ids[0], "mg-image-tasks", nil)
	awaitHeldAnswers(t, 0, 0) // idle: nothing else is held
	fake.answerEditsWith(&heldTask{answer: []byte(`{"created":1,"data":[{"b64_json":"` + strings.Repeat("iVBO", (40<<20)/4) + `"}]}`)})
	e := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-tasks", imageEditBody("edit-async", 1, "1024x1024", "low"))
	awaitHeldAnswers(t, 0, 0)
	qc, _ := errorCodeAndShape(q)
	ec, _ := errorCodeAndShape(e)
	if q.status != http.StatusOK || e.status != http.StatusOK {
		t.Fatalf("on an idle gateway, a 40 MB answer (max_answer and answer_memory 64 MiB): query = %d %s (Retry-After %q); edit = %d %s, charged: %s",
			q.status, qc, q.header.Get("Retry-After"), e.status, ec, balanceOf(t, g))
	}
}

// balanceOf is the account painters' balance and held, as the admin API shows them.
func balanceOf(t *testing.T, g *gateway) string {
	t.Helper()
	return string(call(t, "GET", "http://"+g.admin+"/mediagw/accounts/painters/balance", "", nil).body)
}

// TestStalledReaderDoesNotMakeOthersPayForLostEdits: a client of painters that queries a task
// with a 50 MB answer and reads nothing keeps 50 MB of answer_memory (64 MiB) held until its
// write is given up. A client of another account (sketchers; painters itself, past its share, is
// refused: see TestAccountPastItsShareIsRefusedItsOwnAnswers) has its edit answered 15 MB
// meanwhile: the rest of the answer finds no room and waits for it (imageedit.EditRoomWait),
// which comes back when the stalled write is given up; the edit, and the next, are served.
// (Before, each was 502 and charged its estimate, for as long as the first client kept its
// connection open.)
func TestStalledReaderDoesNotMakeOthersPayForLostEdits(t *testing.T) {
	// Not parallel: the gateway is the test process's one in-process Caddy.
	fake, base, g, ids := startAnswerMemoryGateway(t, oneShare("64MiB"), "64MiB", "image-async", 1)
	fake.set(ids[0], &heldTask{answer: succeededAnswer(ids[0], 1, 50<<20, "")})
	queryAndStall(t, base, ids[0])
	awaitHeldAnswers(t, 50<<20, 51<<20)
	time.Sleep(5 * time.Second)
	awaitBalance(t, g, "painters", "4.95", "0") // the task settled: one image of 0.05 (of the 0.10 held)

	fake.answerEditsWith(&heldTask{answer: []byte(`{"created":1,"data":[{"b64_json":"` + strings.Repeat("iVBO", (15<<20)/4) + `"}]}`)})
	for i := range 2 {
		e := call(t, http.MethodPost, base+"/v1/images/edits", "mg-image-sketchers", imageEditBody("image-async", 1, "1024x1024", "auto"))
		if e.status != http.StatusOK {
			t.Errorf("edit %d, while another client reads nothing = %d %.200s", i+1, e.status, e.body)
		}
	}
}

// queryAndStall queries the task id on a connection of its own, with a small receive buffer,
// and reads nothing of the answer; the connection is closed when the test ends.
func queryAndStall(t *testing.T, base, id string) net.Conn {
	t.Helper()
	return openQuery(t, base, id, 4<<10)
}

// openQuery sends a query of the task id as painters on a connection of its own, whose receive
// buffer is readBuffer bytes, and returns the connection unread; it is closed when the test ends.
func openQuery(t *testing.T, base, id string, readBuffer int) net.Conn {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(readBuffer)
	fmt.Fprintf(conn, "GET /v1/images/tasks/%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer mg-image-tasks\r\n\r\n", id, host)
	return conn
}
