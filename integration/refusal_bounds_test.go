package integration

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestProviderRefusalsAreBounded: a provider that refuses a create with a message of 1 MiB and a
// code and param of 100 KiB (within the 4 MiB the gateway reads of an answer) reaches the client
// with the message cut to 4096 bytes and the code and param to 256, on a character boundary and
// marked "…", as a failed task's error is: on the task API (Ark's 400 passed on, its 500 quoted in
// the 502, DashScope's 400 through its adaptor) and on /v1/videos. Before, the client got the
// 1 MiB whole, and an idempotent create kept it.
func TestProviderRefusalsAreBounded(t *testing.T) {
	message := strings.Repeat("é", 512<<10) // 1 MiB, two bytes a character
	long := strings.Repeat("C", 100<<10)
	fake := startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusBadRequest
		if strings.HasPrefix(r.URL.Path, "/failing/") {
			status = http.StatusInternalServerError
		}
		// Ark's shape (error.code, error.message) and DashScope's (code, message) in one body.
		writeFakeJSON(w, status, map[string]any{"error": map[string]string{"code": long, "message": message, "param": long},
			"code": long, "message": message, "request_id": "r1"})
	}))
	base, _ := startSimGateway(t, specUpstreamFailuresCaddyfile, map[string]string{
		"ark_failing": fake.URL + "/failing", "ark_busy": fake.URL + "/refusing", "dashscope": fake.URL + "/dashscope"})
	check := func(what string, r response, status int) {
		t.Helper()
		e := r.apiError(t)
		if e.message == "" { // the task API's shape: {"code","message"}
			var task struct{ Code, Message string }
			decodeJSON(t, r.body, &task)
			e.code, e.message = task.Code, task.Message
		}
		if r.status != status || len(e.message) > 4096 || !strings.HasSuffix(e.message, "…") || !utf8.ValidString(e.message) ||
			len(e.code) > 256 || len(e.param) > 256 {
			t.Errorf("%s: %d, %d bytes, message of %d bytes, code of %d, param of %d; want %d with the provider's texts bounded",
				what, r.status, len(r.body), len(e.message), len(e.code), len(e.param), status)
		}
	}
	for _, c := range []struct {
		model  string
		status int
	}{{"ark-busy", 400}, {"wan-wrong-key", 400}, {"ark-failing", 502}} {
		body := `{"model":"` + c.model + `","content":[{"type":"text","text":"a lighthouse"}]}`
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v3/contents/generations/tasks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer mg-err")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "bounded-"+c.model)
		check("task API "+c.model, do(t, req), c.status)
	}
	r := call(t, http.MethodPost, base+"/v1/videos", "mg-err", `{"model":"ark-failing-videos","prompt":"a lighthouse"}`)
	check("/v1/videos ark-failing-videos", r, 502)
}
