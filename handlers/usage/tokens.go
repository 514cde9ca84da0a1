package usage

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"

	"github.com/mediagw/mediagw/internal/jsonkeys"
)

// Tokens is token usage as an upstream reported it, in OpenAI's terms. Anthropic's
// input/output tokens and Gemini's usageMetadata counts are read into the same fields.
type Tokens struct {
	Prompt, Completion, Total int64
	known                     bool
	output                    bool
	// derived is set when no output count was given (completion_tokens, output_tokens or
	// candidatesTokenCount), only found as the total less the prompt.
	derived bool
	// counted is set when Completion is the stream's delta events counted (see Sniffer.Seen),
	// not a count the upstream reported.
	counted bool
	// CacheWrite5m and CacheWrite1h are the input tokens (in Prompt too) that Anthropic wrote to
	// its prompt cache for 5 minutes and for 1 hour: cache_creation_input_tokens, split by its
	// cache_creation.ephemeral_1h_input_tokens (the rest, and all of it when the answer has no
	// split, are 5-minute writes, the default TTL). Anthropic bills them above its input price.
	// They are kept in 32 bits, which Tokens' padding and the Sniffer's flags make room for
	// without growing a request's observed writer: a count past 4,294,967,295 (no prompt is
	// that long) stays at it, and the rest of it is charged as input.
	CacheWrite5m, CacheWrite1h uint32
	// CacheRead is the input tokens (in Prompt too) that Anthropic read from its prompt cache
	// (cache_read_input_tokens), billed below its input price; kept in 32 bits as the writes.
	CacheRead uint32
}

// AtMostOutput is t with an output counted from a stream's delta events (see Sniffer.Seen)
// bounded by most, the output tokens the request was estimated at when it named its maximum
// (max_tokens …, times n): an upstream cannot have produced more, whatever number of events it
// sent. An output the upstream reported is not bounded here, nor anything when most is 0 (the
// request named no maximum: its estimate is no bound of its length).
func (t Tokens) AtMostOutput(most int64) Tokens {
	if !t.counted || most <= 0 || t.Completion <= most {
		return t
	}
	t.Completion = most
	t.Total = t.Prompt + most
	return t
}

// AtLeastOutput is t with an output counted from a stream's delta events (see Sniffer.Seen)
// raised to least: for a stream whose usage was not asked for (a completion sent without
// stream_options.include_usage), whose deltas leave out what the provider bills unseen (a
// reasoning model's tokens), least being the output its hold estimated, so that a client pays
// no less for a stream that reported nothing, wherever it left. An output the upstream
// reported is not raised.
func (t Tokens) AtLeastOutput(least int64) Tokens {
	if !t.counted || t.Completion >= least {
		return t
	}
	t.Completion = least
	t.Total = max(t.Total, t.Prompt+least)
	return t
}

// Known reports whether the answer carried usage.
func (t Tokens) Known() bool { return t.known }

// AsInput is t for a call that makes no output tokens (an embedding, a rerank): a total the
// answer reports without an input count (Voyage's and OpenRouter's usage.total_tokens) is its
// input. A rerank's count is not its body's length (the query is read once per document).
func (t Tokens) AsInput() Tokens {
	if t.known && t.Prompt == 0 && t.Total > t.Completion {
		t.Prompt = t.Total - t.Completion
	}
	return t
}

// OutputReported reports whether the usage gave an output count: its completion_tokens,
// output_tokens or candidatesTokenCount, or both a total and a prompt count, whose difference is
// the output (Gemini leaves a zero count out). A usage object without one has not reported 0
// output tokens: billing charges the estimate for them (see billing.Usage.OutputReported).
func (t Tokens) OutputReported() bool { return t.output }

// merge keeps what t already knows and adds what u knows; a later non-zero count wins, since
// streams report usage piecemeal (Anthropic: input in message_start, output in message_delta)
// or once at the end (OpenAI's final chunk).
func (t Tokens) merge(u Tokens) Tokens {
	if !u.known {
		return t
	}
	t.known = true
	if u.output {
		t.derived = u.derived && (t.derived || !t.output) // once given, an output count stays so
	}
	t.output = t.output || u.output
	if u.Prompt != 0 {
		t.Prompt = u.Prompt
	}
	if u.Completion != 0 {
		t.Completion = u.Completion
	}
	if u.Total != 0 {
		t.Total = u.Total
	}
	if u.CacheRead != 0 {
		t.CacheRead = u.CacheRead
	}
	if writes := int64(u.CacheWrite5m) + int64(u.CacheWrite1h); writes != 0 {
		// The later total, split as the costlier of the two reports splits it: Anthropic's
		// message_delta repeats cache_creation_input_tokens without the split that
		// message_start gave (all 5-minute writes, read alone), and its 1-hour writes stay so
		// (at most the new total).
		hour := min(max(int64(t.CacheWrite1h), int64(u.CacheWrite1h)), writes)
		t.CacheWrite1h, t.CacheWrite5m = uint32(hour), uint32(writes-hour)
	}
	if t.Total < t.Prompt+t.Completion {
		t.Total = t.Prompt + t.Completion
	}
	return t
}

// rawUsage is the union of the providers' usage objects, as json.Unmarshal decodes them; a nil
// count was absent (or null). Its counts are read as usageCounts.
type rawUsage struct {
	PromptTokens         *int64 `json:"prompt_tokens"`
	CompletionTokens     *int64 `json:"completion_tokens"`
	TotalTokens          *int64 `json:"total_tokens"`
	InputTokens          *int64 `json:"input_tokens"`
	OutputTokens         *int64 `json:"output_tokens"`
	PromptTokenCount     *int64 `json:"promptTokenCount"`
	CandidatesTokenCount *int64 `json:"candidatesTokenCount"`
	TotalTokenCount      *int64 `json:"totalTokenCount"`
	// ThoughtsTokenCount is Gemini's thinking, billed as output but left out of
	// candidatesTokenCount (totalTokenCount has both): tokens adds it to the candidates.
	ThoughtsTokenCount *int64 `json:"thoughtsTokenCount"`
	// CacheCreationInputTokens and CacheReadInputTokens are Anthropic's input tokens written to
	// and read from the prompt cache, which its input_tokens leave out (OpenAI's prompt_tokens
	// and Gemini's promptTokenCount include their cached tokens): tokens adds them to the input.
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	// ToolUsePromptTokenCount is Gemini's tool results given back to the model (a search's,
	// code execution's), input that promptTokenCount leaves out (totalTokenCount has it): tokens
	// adds it to the input.
	ToolUsePromptTokenCount *int64 `json:"toolUsePromptTokenCount"`
	// CacheCreation is Anthropic's split of cache_creation_input_tokens by cache TTL.
	CacheCreation *cacheCreation `json:"cache_creation"`
}

// cacheCreation is Anthropic's usage.cache_creation: the cache writes of each TTL.
type cacheCreation struct {
	Ephemeral5m *int64 `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h *int64 `json:"ephemeral_1h_input_tokens"`
}

// hour is the 1-hour writes cc reports (0 when it reports none, or a negative count).
func (cc *cacheCreation) hour() int64 {
	if cc == nil || cc.Ephemeral1h == nil {
		return 0
	}
	return max(*cc.Ephemeral1h, 0)
}

// Indexes of usageFields (and usageCounts) by name.
const (
	fPromptTokens = iota
	fCompletionTokens
	fTotalTokens
	fInputTokens
	fOutputTokens
	fPromptTokenCount
	fCandidatesTokenCount
	fTotalTokenCount
	fThoughtsTokenCount
	fCacheCreationInputTokens
	fCacheReadInputTokens
	fToolUsePromptTokenCount
)

// usageCounts is a decoded usage object without pointers (decoding one allocates nothing):
// n[f] is the count of usageFields[f], given[f] whether it was present and not null, as a
// non-nil field of rawUsage.
type usageCounts struct {
	n     [len(usageFields)]int64
	given [len(usageFields)]bool
	// hourWrites is cache_creation.ephemeral_1h_input_tokens (see rawUsage.CacheCreation).
	hourWrites int64
}

// counts is u as usageCounts.
func (u rawUsage) counts() usageCounts {
	var c usageCounts
	for f, p := range [...]*int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens, u.InputTokens,
		u.OutputTokens, u.PromptTokenCount, u.CandidatesTokenCount, u.TotalTokenCount, u.ThoughtsTokenCount,
		u.CacheCreationInputTokens, u.CacheReadInputTokens, u.ToolUsePromptTokenCount} {
		if p != nil {
			c.n[f], c.given[f] = *p, true
		}
	}
	c.hourWrites = u.CacheCreation.hour()
	return c
}

// set notes the count of field f; null unsets it, as json.Unmarshal sets a pointer to nil.
func (u *usageCounts) set(f int, n int64, null bool) { u.n[f], u.given[f] = n, !null }

func (u *usageCounts) tokens() Tokens {
	prompt, promptGiven := u.firstNonZero(fPromptTokens, fInputTokens, fPromptTokenCount)
	output, outputGiven := u.firstNonZero(fCompletionTokens, fOutputTokens, fCandidatesTokenCount)
	total, totalGiven := u.firstNonZero(fTotalTokens, fTotalTokenCount)
	if fromCandidates := !u.given[fCompletionTokens] && !u.given[fOutputTokens]; fromCandidates && outputGiven &&
		u.given[fThoughtsTokenCount] && u.n[fThoughtsTokenCount] > 0 {
		thoughts := u.n[fThoughtsTokenCount]
		output = min(output, math.MaxInt64-thoughts) + thoughts
	}
	if anthropic := !u.given[fPromptTokens] && !u.given[fPromptTokenCount]; anthropic {
		// Anthropic's cached input is input too, outside input_tokens (see rawUsage).
		for _, f := range [...]int{fCacheCreationInputTokens, fCacheReadInputTokens} {
			if u.given[f] && u.n[f] > 0 {
				prompt, promptGiven = min(prompt, math.MaxInt64-u.n[f])+u.n[f], true
			}
		}
	}
	if gemini := !u.given[fPromptTokens] && !u.given[fInputTokens]; gemini &&
		u.given[fToolUsePromptTokenCount] && u.n[fToolUsePromptTokenCount] > 0 {
		// Gemini's tool-use prompt is input too, outside promptTokenCount (see rawUsage).
		toolUse := u.n[fToolUsePromptTokenCount]
		prompt, promptGiven = min(prompt, math.MaxInt64-toolUse)+toolUse, true
	}
	t := Tokens{known: true, Prompt: prompt, Completion: output, Total: total, output: outputGiven}
	if anthropic := !u.given[fPromptTokens] && !u.given[fPromptTokenCount]; anthropic &&
		u.given[fCacheCreationInputTokens] && u.n[fCacheCreationInputTokens] > 0 {
		writes := u.n[fCacheCreationInputTokens]
		hour := min(u.hourWrites, writes)
		t.CacheWrite1h, t.CacheWrite5m = uint32(min(hour, math.MaxUint32)), uint32(min(writes-hour, math.MaxUint32))
	}
	if anthropic := !u.given[fPromptTokens] && !u.given[fPromptTokenCount]; anthropic &&
		u.given[fCacheReadInputTokens] && u.n[fCacheReadInputTokens] > 0 {
		t.CacheRead = uint32(min(u.n[fCacheReadInputTokens], math.MaxUint32))
	}
	if !outputGiven && totalGiven && promptGiven {
		t.Completion, t.output, t.derived = max(total-prompt, 0), true, true
	}
	if t.Total == 0 {
		t.Total = t.Prompt + t.Completion
	}
	return t
}

// firstNonZero is the first non-zero of the counts of fields given, and whether any was given.
// A negative count is no count: it counts as absent, so that an output count of -5 is not
// charged as 0 (nor a negative input as a credit) but stands for the estimate, as a missing one.
func (u *usageCounts) firstNonZero(fields ...int) (n int64, given bool) {
	for _, f := range fields {
		if !u.given[f] || u.n[f] < 0 {
			continue
		}
		given = true
		if u.n[f] != 0 {
			return u.n[f], true
		}
	}
	return 0, given
}

// usagePrefix begins both usage keys, "usage" and "usageMetadata".
var usagePrefix = []byte(`"usage`)

// findUsage decodes the last usage object in b: the value of a "usage" or "usageMetadata" key
// (a quoted key, not text inside a string, where its quotes would be escaped). The two keys are
// looked for together, last first: every provider puts the answer's usage after its content,
// and content may hold objects the model wrote, which the client can steer (a Gemini function
// call's args, an Anthropic tool_use input), with a member of either name.
func findUsage(b []byte) (Tokens, bool) {
	end := len(b)
	for tries := 0; tries < 6; tries++ {
		i := lastUsageKey(b[:end])
		if i < 0 {
			break
		}
		end = i
		if i > 0 && b[i-1] == '\\' {
			continue
		}
		rest := b[i+len(usagePrefix):]
		if name, ok := bytes.CutPrefix(rest, []byte(`"`)); ok {
			rest = name
		} else if name, ok := bytes.CutPrefix(rest, []byte(`Metadata"`)); ok {
			rest = name
		} else {
			continue // another key that begins so ("usage_x"), or text
		}
		rest = rest[jsonkeys.SkipSpace(rest, 0):]
		if len(rest) == 0 || rest[0] != ':' {
			continue
		}
		rest = rest[jsonkeys.SkipSpace(rest, 1):]
		if len(rest) == 0 || rest[0] != '{' {
			continue // "usage": null in the chunks before the last
		}
		// The scanner finds where a plain object ends as it reads it; only the others are
		// delimited first, for json.Unmarshal.
		var u usageCounts
		if _, ok, decided := scanUsage(rest, &u); decided {
			if ok {
				return u.tokens(), true
			}
			continue
		}
		if obj := objectPrefix(rest); obj != nil {
			if u, ok := decodeUsage(obj); ok {
				return u.tokens(), true
			}
		}
	}
	return Tokens{}, false
}

// lastUsageKey is bytes.LastIndex(b, usagePrefix), found with fewer instructions: it looks
// backward for the key's 'g', rarer in JSON than its other bytes, eight bytes at a time, and
// compares the whole key only there (bytes.LastIndex hashes every byte it passes).
func lastUsageKey(b []byte) int {
	const (
		g          = 4 // usagePrefix[g] == 'g'
		ones, high = 0x0101010101010101, 0x8080808080808080
		eightG     = 0x6767676767676767 // 'g' in every byte
	)
	for i := len(b) - len(usagePrefix) + g; i >= g; { // i: where the key's 'g' may be
		if i >= 7 {
			// A word of b[i-7 : i+1] xor 'g'…: it has a zero byte iff one of them is a 'g'.
			if w := binary.LittleEndian.Uint64(b[i-7:]) ^ eightG; (w-ones)&^w&high == 0 {
				i -= 8
				continue
			}
		}
		if b[i] == 'g' && string(b[i-g:i-g+len(usagePrefix)]) == string(usagePrefix) {
			return i - g
		}
		i--
	}
	return -1
}

// objectPrefix returns the JSON object that b starts with (b[0] is '{'), or nil when b ends
// before the object does.
func objectPrefix(b []byte) []byte {
	depth, inString, escaped := 0, false, false
	for i, c := range b {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			if depth--; depth == 0 {
				return b[:i+1]
			}
		}
	}
	return nil
}

// Sniffer reads token usage from an answer body as it streams by, without holding the body:
// an SSE stream line by line (the usage of its events), a JSON answer from its first 64 KiB
// and its last 16 KiB.
type Sniffer struct {
	buf    []byte // SSE: the unfinished line; JSON: the head, then a tail window
	head   []byte // JSON: the first headMax bytes once the body outgrows them
	tokens Tokens
	// deltas counts the SSE data events whose delta carries output (see readDelta), each one
	// token, and a Gemini chunk's output tokens (see readCandidates).
	deltas int64
	pooled *[]byte // where buf came from

	// SSE selects line-by-line reading of a text/event-stream answer.
	SSE bool
	// (The flags are kept together: the Sniffer is part of every pass-through request's
	// observed writer, whose size class each padded flag could push up.)
	skip bool // SSE: the current line is too long to keep whole
	// skipData is set when the line too long to keep is a data line: its last overlongTail
	// bytes are kept in buf, for the usage at its end.
	skipData bool
	// done is set by a data line of [DONE], the end of an OpenAI chat stream.
	done bool
	// emptyDelta is set by an SSE data event whose delta carries no output and is not a chat
	// stream's role chunk (its final chunk, an empty content or Responses delta). (A flag, not
	// a count: only whether there was one is read, and the flags keep the observed writer in
	// its size class with the cache write counts of Tokens.)
	emptyDelta bool
	// errorEvent is set by an SSE data line that failed without serving anything (see
	// failureEvent); notError is set by any data line but [DONE], those and the opening events
	// of a Responses stream before its failure (see ErrorOnly).
	errorEvent, notError bool
}

// buffers holds the sniffers' buffers between answers.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// Release gives the sniffer's buffer back for the next answer; the Sniffer is empty afterwards.
func (s *Sniffer) Release() {
	if s.pooled != nil && cap(s.buf) <= headMax {
		*s.pooled = s.buf[:0]
		buffers.Put(s.pooled)
	}
	*s = Sniffer{}
}

const (
	headMax = 64 << 10
	tailMax = 16 << 10
	lineMax = 256 << 10
	// overlongTail is what is kept of a data line longer than lineMax: enough for the members
	// that follow a Responses event's usage (user, and metadata's 16 pairs of 512 characters,
	// escaped).
	overlongTail = 64 << 10
)

// Write reads p; it never fails.
func (s *Sniffer) Write(p []byte) {
	if s.pooled == nil {
		s.pooled = buffers.Get().(*[]byte)
		s.buf = (*s.pooled)[:0]
	}
	if s.SSE {
		s.lines(p)
		return
	}
	if s.head == nil && len(s.buf)+len(p) <= headMax {
		s.buf = append(s.buf, p...)
		return
	}
	if s.head == nil {
		s.head, s.buf = s.buf, nil
	}
	if len(p) >= tailMax {
		s.buf = append(s.buf[:0], p[len(p)-tailMax:]...)
		return
	}
	if over := len(s.buf) + len(p) - tailMax; over > 0 {
		s.buf = append(s.buf[:0], s.buf[over:]...)
	}
	s.buf = append(s.buf, p...)
}

// lines reads p line by line. A line ends with CRLF, LF or a bare CR, as the SSE format allows:
// each CR and each LF ends one, so that a CRLF also ends an empty line after it, which no data
// line is (an empty line only ends an event, and events are read by their data lines).
func (s *Sniffer) lines(p []byte) {
	for len(p) > 0 {
		i := lineEnd(p)
		if i < 0 {
			s.unfinished(p)
			return
		}
		switch {
		case s.skip:
			s.unfinished(p[:i])
			s.overlongEnd()
		case len(s.buf) > 0:
			s.buf = append(s.buf, p[:i]...)
			s.line(s.buf)
			s.buf = s.buf[:0]
		default:
			s.line(p[:i])
		}
		p = p[i+1:]
	}
}

// lineEnd is the index of the first CR or LF in p, or -1.
func lineEnd(p []byte) int {
	lf := bytes.IndexByte(p, '\n')
	before := p
	if lf >= 0 {
		before = p[:lf]
	}
	if cr := bytes.IndexByte(before, '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// unfinished keeps p, the next bytes of a line that has not ended yet. A line longer than
// lineMax is not kept whole: of a data line only its last overlongTail bytes are, where its
// event's usage stands (a Responses stream's events carry the whole response, with the echoed
// instructions and the output, and its usage after them), of any other line nothing.
func (s *Sniffer) unfinished(p []byte) {
	if !s.skip && len(s.buf)+len(p) <= lineMax {
		s.buf = append(s.buf, p...)
		return
	}
	if !s.skip {
		start := s.buf
		if len(start) < len("data:") {
			start = append(start[:len(start):len(start)], p[:min(len(p), len("data:")-len(start))]...)
		}
		s.skip, s.skipData = true, bytes.HasPrefix(start, []byte("data:"))
	}
	switch {
	case !s.skipData:
		s.buf = s.buf[:0]
	case len(p) >= overlongTail:
		s.buf = append(s.buf[:0], p[len(p)-overlongTail:]...)
	default:
		if over := len(s.buf) + len(p) - overlongTail; over > 0 {
			s.buf = append(s.buf[:0], s.buf[over:]...)
		}
		s.buf = append(s.buf, p...)
	}
}

// overlongEnd ends a line too long to keep: the usage in the kept end of a data line is read.
func (s *Sniffer) overlongEnd() {
	if s.skipData {
		s.notError = true
		if t, ok := findUsage(s.buf); ok {
			s.tokens = s.tokens.merge(t)
		}
	}
	s.skip, s.skipData, s.buf = false, false, s.buf[:0]
}

func (s *Sniffer) line(l []byte) {
	if !bytes.HasPrefix(l, []byte("data:")) {
		return
	}
	if len(l) <= len("data: [DONE]")+2 && string(bytes.TrimSpace(l[5:])) == "[DONE]" {
		s.done = true
	}
	// Only a delta that carries output is counted (see readDelta); one that carries none (a chat
	// stream's opening chunk of its role, its final chunk) is not output served either.
	noOutput := false
	kind, tokens, isDelta := outputDelta, int64(1), false
	switch {
	case bytes.Contains(l, deltaBytes):
		kind, isDelta = readDelta(bytes.TrimSpace(l[5:])), true
	case bytes.Contains(l, candidatesBytes):
		// A Gemini chunk: its candidates' parts are its delta, of many tokens.
		kind, tokens, isDelta = readCandidates(bytes.TrimSpace(l[5:]))
	case bytes.Contains(l, choicesBytes) && bytes.Contains(l, textBytes):
		// A legacy completion's chunk: its choices' text is its delta, as a chat chunk's.
		kind, isDelta = readTextChoices(bytes.TrimSpace(l[5:]))
	}
	if isDelta {
		switch kind {
		case outputDelta:
			s.deltas += tokens
		case emptyDelta:
			s.emptyDelta = true
			noOutput = true
		case roleDelta:
			noOutput = true
		}
	}
	if !s.notError {
		// Only the leading events are classified: the first that may have served something
		// ends it, so that the events of an ordinary stream after its first are not decoded.
		if data := bytes.TrimSpace(l[5:]); string(data) != "[DONE]" {
			switch kind := classify(data); {
			case kind == failureEvent:
				s.errorEvent = true
			case (kind == openingEvent || noOutput) && !s.errorEvent: // no output yet
			default:
				s.notError = true
			}
		}
	}
	if !bytes.Contains(l, []byte(`"usage`)) {
		return
	}
	if t, ok := findUsage(l[5:]); ok {
		s.tokens = s.tokens.merge(t)
	}
}

// Tokens returns the usage read so far; call it when the body is complete.
func (s *Sniffer) Tokens() Tokens {
	if s.SSE {
		return s.tokens
	}
	if t, ok := findUsage(s.buf); ok {
		return t
	}
	if s.head != nil {
		if t, ok := findUsage(s.head); ok {
			return t
		}
	}
	return Tokens{}
}

// Seen is the usage to charge for what the answer streamed: its reported usage, except that
// when the stream was cut (the client left before its end, or the upstream broke it off) or
// reported no output tokens, the output is at least the number of delta events seen, one token
// each (OpenAI's chat and Responses streams and Anthropic's send about one token per delta
// event; a delta that carries no output, such as a chat stream's opening chunk of its role, its
// final chunk of an empty delta or a Responses event's empty delta, is not counted: see
// readDelta), so that a stream cut before its final usage event is charged what it streamed
// rather than its estimate. A stream that ended (not cut, or cut after its [DONE]: a client
// that closes the stream once it read [DONE] may be seen leaving) with deltas that carry no
// output and none that does, such as a chat stream of its role chunk and its final chunk, made
// no output: 0 output tokens, not the estimate. Input tokens the stream did not report stay 0
// (unknown). A cut answer (a stream, or a JSON answer such as Gemini's streamGenerateContent
// without alt=sse, a JSON array of chunks) whose usage found no output count but a total equal to
// its prompt has not reported its output: the deltas counted stand for it, else the estimate.
// An output so counted is bounded by the request's estimate with AtMostOutput.
func (s *Sniffer) Seen(cut bool) Tokens {
	t := s.Tokens()
	if cut && t.output && t.derived && t.Completion == 0 {
		// A cut answer whose last usage gave no output count, only a total equal to its prompt
		// (what Gemini reports before its last chunk, in a JSON stream without alt=sse too):
		// it has not reported 0 output tokens, it had not counted them yet.
		t.output = false
	}
	switch {
	case !s.SSE, !cut && t.Completion > 0:
		return t // a JSON answer, or a stream that ended with its output reported
	case s.deltas == 0 && ((cut && !s.done) || !s.emptyDelta):
		return t // no delta seen, or a cut stream without output yet: the usage, or the estimate
	case s.deltas > 0 && t.Completion >= s.deltas:
		return t
	}
	t.known, t.output, t.counted, t.Completion = true, true, true, s.deltas
	if t.Total < t.Prompt+t.Completion {
		t.Total = t.Prompt + t.Completion
	}
	return t
}

// FromBody reads the token usage of a complete JSON answer.
func FromBody(b []byte) (Tokens, bool) {
	if !bytes.Contains(b, []byte(`"usage`)) {
		return Tokens{}, false
	}
	return findUsage(b)
}
