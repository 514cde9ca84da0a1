package passthrough

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mediagw/mediagw/handlers/apierror"
	"github.com/mediagw/mediagw/handlers/auth"
	"github.com/mediagw/mediagw/internal/jsonkeys"
	"github.com/mediagw/mediagw/storage"
)

// Every reference to an upstream object in a body must be the caller's own: conversations,
// items, prompts, files, vector stores, containers and audio answers that nobody created
// through the gateway are refused like unknown ids, whatever the spelling of the key.
func TestNestedReferencesMustBeOwned(t *testing.T) {
	store := ownersStore(t)
	rt := &Router{Catalog: catalog(t), Owners: store}
	now := time.Now().Unix()
	for _, rec := range []storage.Task{
		{ID: "file_mine", Kind: KindFile, Account: "acme", Provider: "ark", Model: "doubao", CreatedAt: now},
		{ID: "file_theirs", Kind: KindFile, Account: "other", Provider: "ark", Model: "doubao", CreatedAt: now},
		{ID: "vs_mine", Kind: KindVectorStore, Account: "acme", Provider: "ark", Model: "doubao", CreatedAt: now},
		{ID: "resp_mine", Kind: KindResponse, Account: "acme", Provider: "ark", Model: "doubao", CreatedAt: now},
	} {
		if _, err := store.CreateTask(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	acme := auth.Identity{Account: "acme", KeyID: "k"}
	send := func(path, body string) error {
		r := httptest.NewRequest("POST", path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		_, err := rt.Route(httptest.NewRecorder(), r, acme)
		return err
	}
	const resp, chat, msgs = "/v1/responses", "/v1/chat/completions", "/v1/messages"
	const gem = "/v1beta/models/gemini-pro:generateContent"
	for _, tc := range []struct {
		name, path, body, param string // param "" means accepted
	}{
		{"plain response", resp, `{"model":"doubao","input":"hi","previous_response_id":"resp_mine"}`, ""},
		{"own file", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_mine"}]}]}`, ""},
		{"own vector store", resp, `{"model":"doubao","input":"q","tools":[{"type":"file_search","vector_store_ids":["vs_mine"]}]}`, ""},
		{"replayed output items without ids", resp, `{"model":"doubao","input":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]},{"type":"function_call_output","call_id":"c","output":"{}"}]}`, ""},
		{"a replayed output item with an id nobody was given", resp, `{"model":"doubao","input":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]},{"type":"function_call_output","id":"fco_1","call_id":"c","output":"{}"}]}`, "input[1].id"},
		{"replayed output text cites files of the code interpreter", resp, `{"model":"doubao","tools":[{"type":"code_interpreter","container":{"type":"auto"}}],"input":[{"role":"user","content":"plot it"},{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"see plot.png","annotations":[{"type":"container_file_citation","container_id":"cntr_1","file_id":"cfile_1","filename":"plot.png","start_index":0,"end_index":8},{"type":"file_path","file_id":"cfile_2","index":3},{"type":"file_citation","file_id":"file_x","filename":"a.pdf","index":1}]}]}]}`, ""},
		{"a file in annotations that is not a citation", resp, `{"model":"doubao","input":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[{"type":"input_file","file_id":"file_x"}]}]}]}`, "input[0].content[0].annotations[0].file_id"},
		{"a citation whose type is spelled otherwise", resp, `{"model":"doubao","input":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[{"Type":"file_path","file_id":"file_x"}]}]}]}`, "input[0].content[0].annotations[0].file_id"},
		{"a tool schema with a file_id property", resp, `{"model":"doubao","input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"file_id":{"type":"string"},"file_ids":{"type":"array"}}}}]}`, ""},
		{"conversation id", resp, `{"model":"doubao","input":"hi","conversation":"conv_1"}`, "conversation"},
		{"conversation object", resp, `{"model":"doubao","input":"hi","conversation":{"id":"conv_1"}}`, "conversation.id"},
		{"conversation in capitals", resp, `{"model":"doubao","input":"hi","CONVERSATION":"conv_1"}`, "CONVERSATION"},
		{"prompt template", resp, `{"model":"doubao","prompt":{"id":"pmpt_1","version":"2"}}`, "prompt.id"},
		{"item reference", resp, `{"model":"doubao","input":[{"type":"item_reference","id":"msg_1"}]}`, "input[0].id"},
		{"item reference without type", resp, `{"model":"doubao","input":[{"role":"user","content":"x"},{"id":"rs_1"}]}`, "input[1].id"},
		{"item reference with a null type", resp, `{"model":"doubao","input":[{"type":null,"id":"msg_1"}]}`, "input[0].id"},
		{"item reference in another case", resp, `{"model":"doubao","input":[{"type":"message","Type":"item_reference","id":"msg_1"}]}`, "input[0].type"},
		{"item reference behind a type in another case", resp, `{"model":"doubao","input":[{"Type":"message","id":"msg_1"}]}`, "input[0].id"},
		{"typed item with an id", resp, `{"model":"doubao","input":[{"type":"reasoning","id":"rs_1","summary":[]}]}`, "input[0].id"},
		{"messages custom skill behind a type in another case", msgs, `{"model":"doubao","max_tokens":9,"container":{"skills":[{"TYPE":"anthropic","skill_id":"skill_01"}]},"messages":[]}`, "container.skills[0].skill_id"},
		{"gemini file behind an authenticated storage URL", gem, `{"contents":[{"parts":[{"fileData":{"fileUri":"https://storage.cloud.google.com/bucket/secret.pdf","mimeType":"application/pdf"}}]}]}`, "contents[0].parts[0].fileData.fileUri"},
		{"item reference with an escaped key", resp, `{"model":"doubao","input":[{"typ\u0065":"item_reference","\u0069d":"msg_1"}]}`, "input[0].id"},
		{"another account's file", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_theirs"}]}]}`, "input[0].content[0].file_id"},
		{"unknown image file", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_x"}]}]}`, "input[0].content[0].file_id"},
		{"file id in another case", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_mine","File_ID":"file_theirs"}]}]}`, "input[0].content[0].File_ID"},
		{"file id repeated", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_mine","file_id":"file_theirs"}]}]}`, "input[0].content[0].file_id"},
		{"vector store", resp, `{"model":"doubao","input":"q","tools":[{"type":"file_search","vector_store_ids":["vs_mine","vs_2"]}]}`, "tools[0].vector_store_ids[1]"},
		{"vector store spelled with a long s", resp, `{"model":"doubao","input":"q","tools":[{"type":"file_search","vector_\u017ftore_ids":["vs_2"]}]}`, "tools[0].vector_ſtore_ids[0]"},
		{"container id", resp, `{"model":"doubao","input":"q","tools":[{"type":"code_interpreter","container":"cntr_1"}]}`, "tools[0].container"},
		{"container files", resp, `{"model":"doubao","input":"q","tools":[{"type":"code_interpreter","container":{"type":"auto","file_ids":["file_mine","file_x"]}}]}`, "tools[0].container.file_ids[1]"},
		{"plain chat", chat, `{"model":"doubao","messages":[{"role":"user","content":"what did the video show?\n"}],"tool_choice":"auto"}`, ""},
		{"chat with tool results", chat, `{"model":"doubao","messages":[{"role":"tool","tool_call_id":"call_1","content":"x"}],"audio":{"voice":"alloy","format":"wav"}}`, ""},
		{"chat file", chat, `{"model":"doubao","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file_x"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"chat file, escaped key", chat, `{"model":"doubao","messages":[{"role":"user","content":[{"type":"file","file":{"file\u005fid":"file_x"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"chat audio answer", chat, `{"model":"doubao","messages":[{"role":"assistant","audio":{"id":"audio_1"}}]}`, "messages[0].audio.id"},
		{"chat nested repeated key", chat, `{"model":"doubao","messages":[{"role":"user","content":[{"type":"image_url","type":"text","image_url":{"url":"https://cdn.example.com/a.png"}}]}]}`, "messages[0].content[0].type"},
		{"chat audio answer in capitals", chat, `{"model":"doubao","messages":[{"role":"assistant","AUDIO":{"Id":"audio_1"}}]}`, "messages[0].AUDIO.Id"},
		{"messages document", msgs, `{"model":"doubao","max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_x"}}]}]}`, "messages[0].content[0].source.file_id"},
		{"messages container", msgs, `{"model":"doubao","max_tokens":9,"container":"container_1","messages":[]}`, "container"},
		{"messages container object", msgs, `{"model":"doubao","max_tokens":9,"container":{"id":"container_1"},"messages":[]}`, "container.id"},
		{"messages custom skill", msgs, `{"model":"doubao","max_tokens":9,"container":{"skills":[{"type":"anthropic","skill_id":"pptx"},{"type":"custom","skill_id":"skill_01"}]},"messages":[]}`, "container.skills[1].skill_id"},
		{"messages Anthropic skill", msgs, `{"model":"doubao","max_tokens":9,"container":{"skills":[{"type":"anthropic","skill_id":"xlsx","version":"latest"}]},"messages":[]}`, ""},
		{"gemini plain", gem, `{"contents":[{"role":"user","parts":[{"text":"hi"},{"fileData":{"mimeType":"video/mp4","fileUri":"https://www.youtube.com/watch?v=abc"}}]}]}`, ""},
		{"gemini cached content", gem, `{"contents":[{"parts":[{"text":"hi"}]}],"cachedContent":"cachedContents/abc"}`, "cachedContent"},
		{"gemini cached content, snake case", gem, `{"contents":[{"parts":[{"text":"hi"}]}],"cached_content":"cachedContents/abc"}`, "cached_content"},
		{"gemini Files API file", gem, `{"contents":[{"parts":[{"file_data":{"file_uri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]}]}`, "contents[0].parts[0].file_data.file_uri"},
		{"gemini storage object", gem, `{"contents":[{"parts":[{"fileData":{"fileUri":"gs://operator-bucket/private.pdf"}}]}]}`, "contents[0].parts[0].fileData.fileUri"},
		{"gemini private address", gem, `{"contents":[{"parts":[{"fileData":{"fileUri":"http://10.0.0.1/x.pdf"}}]}]}`, "contents[0].parts[0].fileData.fileUri"},
		{"gemini file search store", gem, `{"contents":[{"parts":[{"text":"q"}]}],"tools":[{"fileSearch":{"fileSearchStoreNames":["fileSearchStores/abc"]}}]}`, "tools[0].fileSearch.fileSearchStoreNames[0]"},
		{"image generation with a file", "/v1/images/generations", `{"model":"doubao","prompt":"x","image":{"file_id":"file_x"}}`, "image.file_id"},
		{"embeddings", "/v1/embeddings", `{"model":"doubao","input":["a_id b"]}`, ""},
		{"chat image, inline", chat, `{"model":"doubao","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`, ""},
		{"chat image, public and signed", chat, `{"model":"doubao","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://bucket.s3.amazonaws.com/a.png?X-Amz-Signature=abc","detail":"low"}}]}]}`, ""},
		{"chat image, loopback", chat, `{"model":"doubao","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"http://127.1:8000/admin"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"chat image, key in capitals", chat, `{"model":"doubao","messages":[{"role":"user","content":[{"type":"image_url","IMAGE_URL":{"URL":"http://10.0.0.1/x.png"}}]}]}`, "messages[0].content[0].IMAGE_URL.URL"},
		{"responses image, private", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_image","image_url":"http://10.1.2.3/a.png"}]}]}`, "input[0].content[0].image_url"},
		{"responses file, local path", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_file","file_url":"file:///etc/passwd"}]}]}`, "input[0].content[0].file_url"},
		{"responses image, public", resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://cdn.example.com/a.png"}]}]}`, ""},
		{"messages source, metadata address", msgs, `{"model":"doubao","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"http://169.254.169.254/latest/meta-data"}}]}]}`, "messages[0].content[0].source.url"},
		{"messages source, inline", msgs, `{"model":"doubao","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`, ""},
		{"plain messages", msgs, `{"model":"doubao","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(tc.path, tc.body)
			if tc.param == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if e := wantError(t, err, 400, "invalid_request_body"); e.Param != tc.param {
				t.Fatalf("param %q, want %q (%s)", e.Param, tc.param, e.Message)
			}
		})
	}

	// A generateContent body is checked as JSON, so it must be sent as JSON.
	r := httptest.NewRequest("POST", gem, strings.NewReader(`{"cachedContent":"cachedContents/abc"}`))
	r.Header.Set("Content-Type", "text/plain")
	_, err := rt.Route(httptest.NewRecorder(), r, acme)
	wantError(t, err, 400, "invalid_request_body")

	// Another account's object and an unknown one get the same answer.
	foreign := send(resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_theirs"}]}]}`)
	unknown := send(resp, `{"model":"doubao","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_none"}]}]}`)
	if foreign.Error() != unknown.Error() {
		t.Fatalf("answers differ: %q and %q", foreign, unknown)
	}

	// Bounds: the number of references (store reads), and the depth of the walk.
	many := `{"model":"doubao","input":"q","tools":[{"type":"file_search","vector_store_ids":[` + strings.Repeat(`"vs_mine",`, MaxBodyRefs) + `"vs_mine"]}]}`
	if e := wantError(t, send(resp, many), 400, "invalid_request_body"); !strings.Contains(e.Message, "more than") {
		t.Fatal(e)
	}
	deep := `{"model":"doubao","input":"q","file_id":null,"metadata":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`
	wantError(t, send(resp, deep), 400, "invalid_request_body")
}

// The cheap test that skips the walk must never skip a body that holds a reference.
func FuzzReferenceHint(f *testing.F) {
	f.Add(`{"file_id":"x"}`)
	f.Add(`{"fil\u0065_id":"x"}`)
	f.Add(`{"messages":[{"AUDIO":{"id":"a"}}]}`)
	f.Add(`{"container":"c"}`)
	f.Add(`{"input":[{"ID":"x"}],"converſation":"c"}`)
	f.Add(`{"Prompt":{"iD":"p"}}`)
	f.Add(`{"messages":[{"content":[{"image_URL":{"url":"http://127.0.0.1/"}}]}]}`)
	f.Add(`{"messages":[{"content":[{"source":{"URL":"file:///x"}}]}]}`)
	f.Add(`{"contents":[{"parts":[{"FILEURI":"gs://b/o"}]}],"CachedContent":"c"}`)
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return // the router walks only bodies that jsonkeys.Members accepted
		}
		for _, ep := range []*bodyRefs{chatRefs, messagesRefs, responsesRefs, geminiRefs} {
			var found foundRefs
			err := walkRefs([]byte(body), ep, &found)
			if err == nil && len(found.refs) > 0 && !ep.mayHold([]byte(body)) {
				t.Fatalf("%q holds %v, but the hint skips it", body, found.refs)
			}
		}
		// A media URL that would be refused is never skipped either.
		badURL := jsonkeys.Walk([]byte(body), mediaURLs)
		if _, ok := errors.AsType[*apierror.Error](badURL); ok {
			for _, ep := range []*bodyRefs{chatRefs, messagesRefs, responsesRefs} {
				if !ep.mayHold([]byte(body)) {
					t.Fatalf("%q has a refused media URL (%v), but the hint skips it", body, badURL)
				}
			}
		}
	})
}

// BenchmarkBodyRefs measures what the reference check adds to a request: a chat body that the
// hint lets through unwalked, and bodies that are walked.
func BenchmarkBodyRefs(b *testing.B) {
	rt := &Router{}
	chat := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"` + strings.Repeat("Tell me about the weather in Paris. ", 20) + `"}],"temperature":0.2,"stream":true}`)
	tools := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"` + strings.Repeat("result ", 100) + `"}]}`)
	responses := []byte(`{"model":"gpt-4o-mini","input":[{"role":"user","content":[{"type":"input_text","text":"` + strings.Repeat("Describe this. ", 40) + `"}]}],"tools":[{"type":"web_search"}]}`)
	for _, bc := range []struct {
		name string
		ep   Endpoint
		body []byte
	}{
		{"chat/plain", Capabilities[0], chat},
		{"chat/tool_call_id", Capabilities[0], tools},
		{"responses", Capabilities[1], responses},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if err := rt.checkBodyRefs(context.Background(), auth.Identity{Account: "a"}, bc.ep, bc.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzBodyRefs sends arbitrary JSON bodies to the endpoints with nested references: the router
// never panics, and a body it accepts is replayed byte for byte.
func FuzzBodyRefs(f *testing.F) {
	f.Add("/v1/responses", `{"model":"doubao","input":[{"type":"item_reference","id":"x"}]}`)
	f.Add("/v1/chat/completions", `{"model":"doubao","messages":[{"content":[{"image_url":{"url":"data:x"}}]}]}`)
	f.Add("/v1/messages", `{"model":"doubao","container":{"skills":[{"type":"custom","skill_id":"s"}]}}`)
	f.Add("/v1beta/models/gemini-pro:generateContent", `{"contents":[{"parts":[{"fileData":{"fileUri":"gs://b/o"}}]}]}`)
	store := ownersStore(f)
	rt := &Router{Catalog: catalog(f), Owners: store}
	f.Fuzz(func(t *testing.T, path, body string) {
		if _, _, ok := rt.endpoint("POST", path); !ok || !strings.HasPrefix(path, "/") {
			return
		}
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.URL.Path = path
		r.Header.Set("Content-Type", "application/json")
		route, err := rt.Route(httptest.NewRecorder(), r, auth.Identity{Account: "acme"})
		if err != nil {
			return
		}
		defer route.Done()
		if got, _ := io.ReadAll(r.Body); string(got) != body {
			t.Fatalf("accepted %q but replayed %q", body, got)
		}
	})
}

// FuzzKeyHint holds keyHint to its rule read plainly (keyHintAtEveryQuote): the same answer for
// any body, so that the way it looks for words in quotes (between one quote and the next) never
// changes whether a body's references are walked.
func FuzzKeyHint(f *testing.F) {
	for _, body := range []string{
		`{"model":"bench-chat","messages":[{"role":"user","content":"hello"}]}`,
		`{"audio":{"id":"a"}}`, `{"AUDIO":1}`, `{"Url":1}`, `{"image_URL":"x"}`, `{"FILE_ID":"f"}`,
		`{"vector_store_ids":[]}`, `{"x":"\u0061udio"}`, `{"ſ":1}`, "\xc5", `"audio`, `"url"`, `_`, `_i`,
		`{"file_Id":1}`, `{"store_id":1}`, `{"tore_id":1}`, `{"a\\u":1}`, `"container"`, `""url"`, `"url""`, "",
		`"` + strings.Repeat("A", 70) + `"`, `"` + strings.Repeat("a", 63) + `"`, `"` + strings.Repeat("a", 64) + `"`, `"` + strings.Repeat("a", 62) + `"`,
	} {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		long := strings.Repeat("a", 70) // past the lengths keyHint keeps a bit for
		for _, words := range [][]string{nil, {"url"}, {"audio", "url"}, {"container", "url"}, {"", "a"}, {long, long[:63], long[:62]}} {
			if got, want := keyHint([]byte(body), words...), keyHintAtEveryQuote([]byte(body), words); got != want {
				t.Fatalf("keyHint(%q, %q) = %v, the rule says %v", body, words, got, want)
			}
		}
	})
}

// keyHintAtEveryQuote is keyHint's rule as it reads: an escape, a ſ, file_id, store_id or _url
// anywhere, or after any quote one of words followed by a quote, in any case.
func keyHintAtEveryQuote(body []byte, words []string) bool {
	s := string(body)
	if strings.Contains(s, `\u`) || strings.Contains(s, "ſ") {
		return true
	}
	b := []byte(s) // ASCII letters in lower case, every other byte as it is
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	lower := string(b)
	for i := range len(s) {
		if s[i] == '_' && (strings.HasPrefix(lower[i+1:], "url") ||
			strings.HasPrefix(lower[i+1:], "id") && (strings.HasSuffix(lower[:i], "file") || strings.HasSuffix(lower[:i], "store"))) {
			return true
		}
		if s[i] != '"' {
			continue
		}
		for _, w := range words {
			if after := s[i+1:]; len(after) > len(w) && after[len(w)] == '"' && strings.EqualFold(after[:len(w)], w) && asciiOnly(after[:len(w)]) {
				return true
			}
		}
	}
	return false
}

func asciiOnly(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
