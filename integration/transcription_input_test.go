package integration

import (
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// transcriptionInputCaddyfile prices a transcription model by its tokens (gpt-4o-transcribe bills
// audio input tokens and text output tokens), in the README's proxy form.
const transcriptionInputCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models atk-transcribe
		}
		price atk-transcribe {
			input_tokens 6000
			output_tokens 10000
			max_output 100
		}
		key mg-atk-audio {
			account atk-audio
		}
	}
}

http://127.0.0.1:{{port}} {
	route {
		mediagw_auth
		mediagw_route
		reverse_proxy {
			dynamic mediagw
			transport mediagw
			lb_policy first
		}
	}
}
`

// TestTranscriptionWithoutUsageChargesItsInput: OpenAI's POST /v1/audio/transcriptions
// answers response_format "text" (or srt, vtt) with the transcript alone, without usage, while
// it bills the audio's input tokens. An answer without usage is charged the request's estimate,
// whose input is "one token per 4 bytes of request body" (docs/billing.md); but a multipart body
// is not counted (its Sizing has no BodyBytes), so a 400 KB recording is charged no input at all:
// only the estimate's 100 output tokens. It must be charged at least its body's estimate of input
// (the account is credited enough to hold it: about 100,000 tokens at 6000 a million, 600).
func TestTranscriptionWithoutUsageChargesItsInput(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer openai-operator-key" || r.URL.Path != "/v1/audio/transcriptions" {
			http.NotFound(w, r)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if r.FormValue("response_format") == "text" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "a long meeting, transcribed\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text":"a long meeting, transcribed","usage":{"type":"tokens","input_tokens":20000,"input_token_details":{"text_tokens":0,"audio_tokens":20000},"output_tokens":6,"total_tokens":20006}}`)
	}))
	t.Cleanup(up.Close)
	base, g := startSimGateway(t, transcriptionInputCaddyfile, map[string]string{"up_url": up.URL})
	keysEnv{g: g}.credit(t, "atk-audio", "1000", "transcription-audio")

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("model", "atk-transcribe")
	mw.WriteField("response_format", "text")
	fw, _ := mw.CreateFormFile("file", "meeting.mp3")
	fw.Write(bytes.Repeat([]byte{0xff, 0xfb, 0x90, 0x64}, 100_000)) // 400 KB of "audio"
	mw.Close()
	size := form.Len()
	req, _ := http.NewRequest("POST", base+"/v1/audio/transcriptions", &form)
	req.Header.Set("Authorization", "Bearer mg-atk-audio")
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r := do(t, req)
	if r.status != 200 {
		t.Fatalf("transcription: %d %s", r.status, r.body)
	}
	admin := "http://" + g.admin + "/mediagw/accounts/atk-audio"
	var ledger string
	waitFor(t, "the settlement", func() bool {
		ledger = ledgerEnds(t, call(t, "GET", admin+"/ledger", "", nil), true)
		return strings.Contains(ledger, "settle")
	})
	t.Logf("a %d-byte transcription answered without usage: %s", size, ledger)
	charged, _ := strconv.ParseFloat(ledger[strings.LastIndex(ledger, " ")+1:], 64)
	minimum := float64((size+3)/4) * 6000 / 1e6 // the body's estimate of input, at the input price
	if charged < minimum {
		t.Errorf("charged %v; the body's own estimate of input alone is %v (%d bytes / 4 at input_tokens 6000)", charged, minimum, size)
	}
	_ = fmt.Sprint
}
