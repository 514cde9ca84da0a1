package usage

import (
	"slices"
	"strings"
	"testing"

	"github.com/mediagw/mediagw/handlers/billing"
)

// A Responses answer's image_generation_call items, as OpenAI's reference shows them: a result
// of base64 (here large, and with an escaped slash), status, and the size and quality made.
const (
	answerImageHigh = `{"id":"ig_1","type":"image_generation_call","status":"completed","background":"opaque","output_format":"png",` +
		`"quality":"high","size":"1024x1536","revised_prompt":"a \"lighthouse\"","result":"`
	answerImageLow = `{"type":"image_generation_call","id":"ig_2","result":"iVBORw0KGgo\/AAAA","status":"completed","size":"1024x1024","quality":"low"}`
)

// readInChunks is what ResponseImages reports of answer written in pieces of chunk bytes.
func readInChunks(sse bool, answer string, chunk int) billing.MadeImages {
	r := ResponseImages{SSE: sse}
	for s := answer; s != ""; {
		n := min(max(chunk, 1), len(s))
		r.Write([]byte(s[:n]))
		s = s[n:]
	}
	return r.Made()
}

func jsonAnswer(status string, items ...string) string {
	return `{"id":"resp_1","object":"response","created_at":1,"status":"` + status + `","model":"gpt-5",` +
		`"output":[` + strings.Join(items, ",") + `],"usage":{"input_tokens":10,"output_tokens":20,"total_tokens":30},"tools":[{"type":"image_generation","size":"auto"}]}`
}

// TestResponseImagesOfAJSONAnswer: the completed image_generation_call items of a whole, final
// response, read however the answer is split, each at its size and quality; a failed call, a
// message and a background response (queued) are not images made, and an answer not read whole
// reports nothing.
func TestResponseImagesOfAJSONAnswer(t *testing.T) {
	big := answerImageHigh + strings.Repeat("QUJD", 300_000) + `"}`
	failed := `{"type":"image_generation_call","id":"ig_3","status":"failed","result":null,"error":{"code":"moderation_blocked"}}`
	message := `{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"size \"x\""}]}`
	want := []billing.MadeImage{{Size: "1024x1536", Quality: "high"}, {Size: "1024x1024", Quality: "low"}}
	for _, c := range []struct {
		name   string
		answer string
		want   billing.MadeImages
	}{
		{"two made", jsonAnswer("completed", big, message, failed, answerImageLow), billing.MadeImages{Reported: true, Images: want}},
		{"none made", jsonAnswer("completed", message), billing.MadeImages{Reported: true}},
		{"incomplete", jsonAnswer("incomplete", answerImageLow), billing.MadeImages{Reported: true, Images: want[1:]}},
		{"escaped names", `{"status":"completed","\u006futput":[{"type":"image\u005fgeneration_call","status":"completed","size":"1024x1024","quality":"low"}]}`,
			billing.MadeImages{Reported: true, Images: want[1:]}},
		{"no status, a result", `{"output":[{"type":"image_generation_call","result":"QUJD"},{"type":"image_generation_call","result":""}]}`,
			billing.MadeImages{Reported: true, Images: []billing.MadeImage{{}}}},
		{"background", jsonAnswer("queued"), billing.MadeImages{}},
		{"cut", jsonAnswer("completed", answerImageLow)[:200], billing.MadeImages{}},
		{"no output: none made", `{"object":"response.input_tokens","input_tokens":11}`, billing.MadeImages{Reported: true}},
	} {
		for _, chunk := range []int{1, 7, 4096, len(c.answer)} {
			if got := readInChunks(false, c.answer, chunk); got.Reported != c.want.Reported || !slices.Equal(got.Images, c.want.Images) {
				t.Errorf("%s, in chunks of %d: %+v, want %+v", c.name, chunk, got, c.want)
			}
		}
	}
}

// sseEvent is one event of a Responses stream as OpenAI sends it.
func sseEvent(typ, data string) string {
	return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\",\"sequence_number\":1," + data + "}\n\n"
}

// TestResponseImagesOfAStream: a stream's final event lists the images made; a stream that ended
// before it reports the calls its events completed (at the size and quality of their item or
// partial images) and those that streamed partial images only (as held); a stream with no whole
// event reports nothing.
func TestResponseImagesOfAStream(t *testing.T) {
	created := sseEvent("response.created", `"response":{"id":"resp_1","status":"in_progress","output":[]}`)
	added := func(id string) string {
		return sseEvent(eventItemAdded, `"output_index":0,"item":{"id":"`+id+`","type":"image_generation_call","status":"in_progress"}`)
	}
	partial := func(id string) string {
		return sseEvent(eventImagePartial, `"item_id":"`+id+`","output_index":0,"partial_image_index":0,"partial_image_b64":"UEFSVA==","size":"1536x1024","quality":"medium"`)
	}
	completed := func(id string) string {
		return sseEvent(eventImageComplete, `"item_id":"`+id+`","output_index":0`)
	}
	done := func(id string) string {
		return sseEvent(eventItemDone, `"output_index":0,"item":{"id":"`+id+`","type":"image_generation_call","status":"completed","size":"1024x1024","quality":"high","result":"QUJD"}`)
	}
	final := sseEvent("response.completed", `"response":{"id":"resp_1","status":"completed","output":[`+answerImageLow+`]}`)
	for _, c := range []struct {
		name   string
		stream string
		want   billing.MadeImages
	}{
		{"final event", created + added("ig_1") + partial("ig_1") + completed("ig_1") + done("ig_1") + final,
			billing.MadeImages{Reported: true, Images: []billing.MadeImage{{Size: "1024x1024", Quality: "low"}}}},
		{"cut after output_item.done", created + added("ig_1") + completed("ig_1") + done("ig_1"),
			billing.MadeImages{Reported: true, Images: []billing.MadeImage{{Size: "1024x1024", Quality: "high"}}}},
		{"cut after completed, before its item", created + added("ig_1") + partial("ig_1") + completed("ig_1"),
			billing.MadeImages{Reported: true, Images: []billing.MadeImage{{Size: "1536x1024", Quality: "medium"}}}},
		{"partial images only", created + added("ig_1") + partial("ig_1") + partial("ig_1"),
			billing.MadeImages{Reported: true, Images: []billing.MadeImage{{}}}},
		{"no image yet", created + added("ig_1"), billing.MadeImages{Reported: true}},
		// A final event that leaves out images the events completed does not unmake them; one
		// that lists a call of partial images only as not made is believed.
		{"a final event without the completed image", created + added("ig_1") + completed("ig_1") + done("ig_1") +
			sseEvent("response.completed", `"response":{"id":"resp_1","status":"completed","output":[]}`),
			billing.MadeImages{Reported: true, Images: []billing.MadeImage{{Size: "1024x1024", Quality: "high"}}}},
		{"a final event without a call of partial images only", created + added("ig_1") + partial("ig_1") +
			sseEvent("response.completed", `"response":{"id":"resp_1","status":"completed","output":[]}`),
			billing.MadeImages{Reported: true}},
		{"no whole event", created[:30], billing.MadeImages{}},
		{"CR line ends", strings.ReplaceAll(created+completed("ig_9"), "\n", "\r"),
			billing.MadeImages{Reported: true, Images: []billing.MadeImage{{}}}},
	} {
		for _, chunk := range []int{1, 13, len(c.stream)} {
			if got := readInChunks(true, c.stream, chunk); got.Reported != c.want.Reported || !slices.Equal(got.Images, c.want.Images) {
				t.Errorf("%s, in chunks of %d: %+v, want %+v", c.name, chunk, got, c.want)
			}
		}
	}
}

// FuzzResponseImages: any answer, JSON or streamed, is read without a panic, and what it reports
// does not depend on how the answer was split into writes.
func FuzzResponseImages(f *testing.F) {
	f.Add(jsonAnswer("completed", answerImageLow), false, 3)
	f.Add(sseEvent(eventImageComplete, `"item_id":"x"`)+sseEvent("response.completed", `"response":{"output":[`+answerImageLow+`]}`), true, 5)
	f.Add(`{"output":[{"type":"image_generation_call","status":"\u0063ompleted"]]}}}`, false, 1)
	f.Fuzz(func(t *testing.T, answer string, sse bool, chunk int) {
		chunk = max(1, chunk%64)
		a, b := readInChunks(sse, answer, len(answer)), readInChunks(sse, answer, chunk)
		if a.Reported != b.Reported || len(a.Images) != len(b.Images) {
			t.Fatalf("whole %+v, split in %d: %+v", a, chunk, b)
		}
	})
}
