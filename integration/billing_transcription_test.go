package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// transcriptionCaddyfile prices two transcription models by their tokens (2.5 per million input
// tokens, 10 per million output tokens, max_output 2000), served by a fake of OpenAI's
// /v1/audio/transcriptions ({{up_url}}), through the README's pass-through site.
const transcriptionCaddyfile = `{
	{{globals}}
	mediagw {
		storage badger {{data}}
		provider openai {
			base_url {{up_url}}/v1
			api_key openai-operator-key
			models gpt-4o-transcribe whisper-1
		}
		price gpt-4o-transcribe {
			input_tokens 2.5
			output_tokens 10
			max_output 2000
		}
		price whisper-1 {
			input_tokens 2.5
			output_tokens 10
			max_output 2000
		}
		key mg-listen {
			account listen
		}
	}
}
` + readmePassThroughSite

// startTranscriber is a fake of OpenAI's POST /v1/audio/transcriptions, answering as its API
// reference has it: a token-billed model (gpt-4o-transcribe) reports
// usage {"type":"tokens","input_tokens","output_tokens","total_tokens","input_token_details"},
// whisper-1 usage {"type":"duration","seconds"}.
func startTranscriber(t *testing.T) string {
	return startFake(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			writeFakeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no such route", "type": "invalid_request_error"}})
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			writeFakeJSON(w, 400, map[string]any{"error": map[string]any{"message": err.Error(), "type": "invalid_request_error"}})
			return
		}
		switch {
		case r.FormValue("stream") == "true":
			// The streamed transcription's events: transcript.text.delta, then
			// transcript.text.done with the usage.
			w.Header().Set("Content-Type", "text/event-stream")
			for _, word := range []string{"hello", " there"} {
				fmt.Fprintf(w, "data: {\"type\":\"transcript.text.delta\",\"delta\":%q}\n\n", word)
			}
			fmt.Fprint(w, `data: {"type":"transcript.text.done","text":"hello there","usage":{"type":"tokens","input_tokens":14,"output_tokens":45,"total_tokens":59,"input_token_details":{"text_tokens":0,"audio_tokens":14}}}`+"\n\n")
		case r.FormValue("model") == "gpt-4o-transcribe":
			writeFakeJSON(w, 200, map[string]any{"text": "hello there", "usage": map[string]any{"type": "tokens", "input_tokens": 14,
				"output_tokens": 45, "total_tokens": 59, "input_token_details": map[string]any{"text_tokens": 0, "audio_tokens": 14}}})
		default:
			writeFakeJSON(w, 200, map[string]any{"text": "hello there", "usage": map[string]any{"type": "duration", "seconds": 9}})
		}
	})).URL
}

// TestTranscriptionIsChargedItsTokens: a transcription (openai-go) of a token-priced model is
// settled from the tokens its answer reports (gpt-4o-transcribe: 14 input and 45 output
// tokens, 0.000035 + 0.00045), not its estimate; whisper-1, which reports the audio's seconds
// and no tokens, is charged its estimate.
func TestTranscriptionIsChargedItsTokens(t *testing.T) {
	base, g := startSimGateway(t, transcriptionCaddyfile, map[string]string{"up_url": startTranscriber(t)})
	keysEnv{g: g, base: base}.credit(t, "listen", "10", "listen-1")
	oa := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("mg-listen"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	audio := bytes.Repeat([]byte("RIFF----WAVEfmt "), 64) // 1024 bytes: 256 input tokens estimated
	for _, c := range []struct {
		model, charged string
	}{
		{"gpt-4o-transcribe", "0.000485"},
		{"whisper-1", ""}, // its estimate: the amount held
	} {
		from := len(ledgerEntries(t, g, "listen"))
		got, err := oa.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{Model: openai.AudioModel(c.model),
			File: openai.File(io.NopCloser(bytes.NewReader(audio)), "hello.wav", "audio/wav")})
		if err != nil || !strings.Contains(got.Text, "hello") {
			t.Fatalf("%s: %+v, %v", c.model, got, err)
		}
		held, end := toolEnded(t, g, "listen", from)
		want := c.charged
		if want == "" {
			want = held
		}
		if end != "settle "+want {
			t.Errorf("%s: held %s, ended %s; want settle %s", c.model, held, end, want)
		}
	}
	// Streamed (stream: true), the usage comes with transcript.text.done.
	from := len(ledgerEntries(t, g, "listen"))
	stream := oa.Audio.Transcriptions.NewStreaming(ctx, openai.AudioTranscriptionNewParams{Model: "gpt-4o-transcribe",
		File: openai.File(io.NopCloser(bytes.NewReader(audio)), "hello.wav", "audio/wav")})
	var text string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "transcript.text.done" {
			text = ev.Text
		}
	}
	if err := stream.Err(); err != nil || text != "hello there" {
		t.Fatalf("the streamed transcription: %q, %v", text, err)
	}
	if held, end := toolEnded(t, g, "listen", from); end != "settle 0.000485" {
		t.Errorf("the streamed transcription: held %s, ended %s; want settle 0.000485", held, end)
	}
}
