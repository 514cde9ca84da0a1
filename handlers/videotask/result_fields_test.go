package videotask

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/mediagw/mediagw/storage"
)

// queryResult answers, member for member and byte for byte once encoded, what the answer built
// in the upstream's map answered (queryResultInMap, its form until session 14), and leaves the
// upstream's map as it was.
func FuzzQueryResult(f *testing.F) {
	for _, seed := range []string{
		`{"id":"cgt-1","model":"m","status":"queued","error":null,"created_at":1,"updated_at":2,"service_tier":"default","execution_expires_after":172800}`,
		`{"id":"other","model":"up-model","status":"succeeded","content":{"video_url":"u","last_frame_url":"f"},"resolution":"720p","ratio":"","duration":null,"usage":{"total_tokens":5}}`,
		`{"status":"failed","error":{"code":"X","message":"boom"},"created_at":"1","updated_at":1.5}`,
		`{"status":"failed","failure_reason":{"message":"m"},"content":[1]}`,
		`{"status":"Processing","resolution":" null ","ratio":"16:9","duration":5,"x<y":"&"}`,
		`{"status":"succeeded","content":{"Last_Frame_URL":"f","video_url":"v"},"created_at":1e3}`,
		`{"\u00e9":1,"ctl\u0001":2,"id":"\u2028"}`,
		`{"status":"succeeded","content":{ "video_url" : "a b" },"x":[1, 2],"y":"c\td","z":"e f"}`,
		`{}`,
		`null`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, noLastFrame bool) {
		var up map[string]json.RawMessage
		if json.Unmarshal(body, &up) != nil {
			return
		}
		rec := storage.Task{ID: "cgt-9", Model: "m<&>", CreatedAt: 10, UpdatedAt: 11, NoLastFrame: noLastFrame}
		before := maps.Clone(up)
		fields, status := queryResult(up, rec)
		if !maps.EqualFunc(up, before, sameRaw) {
			t.Fatalf("queryResult changed the upstream's map: %q, was %q", up, before)
		}
		want, wantStatus := queryResultInMap(maps.Clone(up), rec)
		if status != wantStatus || !maps.EqualFunc(fields.asMap(), want, sameRaw) || len(fields) != len(want) {
			t.Fatalf("queryResult(%s) = %q, %s; want %q, %s", body, fields, status, want, wantStatus)
		}
		for i := 1; i < len(fields); i++ {
			if fields[i-1].name >= fields[i].name {
				t.Fatalf("members out of order: %q", fields)
			}
		}
		got, err := encodeAnswer(fields, true) // up was decoded by json.Unmarshal: valid values
		wantBody, wantErr := marshalAnswer(want)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, wantBody) {
			t.Fatalf("encodeAnswer = %s, %v; marshalAnswer of the map: %s, %v", got, err, wantBody, wantErr)
		}
	})
}

// queryResultInMap is queryResult as it was built until session 14: in the upstream's map.
func queryResultInMap(upstream map[string]json.RawMessage, t storage.Task) (map[string]json.RawMessage, string) {
	out := upstream
	if out == nil {
		out = make(map[string]json.RawMessage, 8)
	}
	failed := failure(maps.Clone(upstream))
	status := answerStatus(upstream["status"])
	content, hasResult := resultContent(upstream["content"], t)
	if status == StatusSucceeded && !hasResult {
		status = StatusRunning // since session 16
	}
	if status == StatusQueued && t.Status == StatusRunning {
		status = StatusRunning // since session 17
	}
	for k, v := range out {
		if shadowsAnswerField(k) || k == "failure_reason" {
			delete(out, k) // since session 16; failure_reason since session 17
			continue
		}
		if m := taskAnswerType.member(k); m != nil && !slices.Contains(answerFieldNames, k) {
			if fitted, ok := m.fit(v); ok {
				out[k] = fitted // since session 17: typed as the Ark SDK's structs are
			} else {
				delete(out, k)
			}
		}
	}
	out["id"] = quotedLike(upstream["id"], t.ID)
	out["model"] = quotedLike(upstream["model"], t.Model)
	out["status"] = statusJSON[status]
	if _, ok := integer(upstream["created_at"]); !ok {
		out["created_at"] = mustJSON(t.CreatedAt)
	}
	if _, ok := integer(upstream["updated_at"]); !ok {
		out["updated_at"] = mustJSON(t.UpdatedAt)
	}
	errorJSON := nullJSON
	if status == StatusFailed {
		errorJSON = failed
	}
	out["error"] = errorJSON
	if status != StatusSucceeded {
		out["content"] = emptyObjectJSON
	} else {
		out["content"] = content
	}
	for _, k := range []string{"resolution", "ratio"} {
		if s, ok := jsonString(upstream[k]); !ok || s == "" {
			delete(out, k) // since session 16: only strings
		}
	}
	for _, k := range []string{"created_at", "updated_at", "duration"} {
		if n, ok := integer(upstream[k]); ok && !plainInteger(upstream[k]) {
			out[k] = mustJSON(n) // since session 16: written plainly
		} else if !ok && k == "duration" {
			delete(out, k) // since session 16: only integers
		}
	}
	return out, status
}

// sameRaw reports whether two JSON values are the same bytes.
func sameRaw(a, b json.RawMessage) bool { return bytes.Equal(a, b) }
