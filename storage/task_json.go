package storage

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A task record in JSON: json.Marshal of a Task, as Redis stores it and as Badger stored it
// before its binary records (badger_task_record.go), which it still reads through this. Every
// create, every watcher read and write and every task query encodes or decodes one, so they are
// encoded and decoded here without reflection. marshalTask writes the very bytes that
// json.Marshal writes; unmarshalTask and unmarshalTaskHead read the records that marshalTask
// writes and leave any other shape (other key order or case, unknown keys, whitespace, escapes
// in a key, null, a number that is not a plain integer, invalid JSON) to json.Unmarshal, so
// that every input decodes exactly as json.Unmarshal decodes it, errors included.

// marshalTask is json.Marshal(t).
func marshalTask(t *Task) ([]byte, error) {
	b := make([]byte, 0, marshalTaskSize(t))
	b = appendTaskString(append(b, `{"id":`...), t.ID)
	b = appendTaskString(append(b, `,"kind":`...), t.Kind)
	b = appendTaskString(append(b, `,"account":`...), t.Account)
	b = appendTaskString(append(b, `,"key_id":`...), t.KeyID)
	b = appendTaskString(append(b, `,"provider":`...), t.Provider)
	if t.Upstream != "" {
		b = appendTaskString(append(b, `,"upstream":`...), t.Upstream)
	}
	if t.UpstreamAddress != "" {
		b = appendTaskString(append(b, `,"upstream_address":`...), t.UpstreamAddress)
	}
	if t.UpstreamID != "" {
		b = appendTaskString(append(b, `,"upstream_id":`...), t.UpstreamID)
	}
	b = appendTaskString(append(b, `,"model":`...), t.Model)
	b = strconv.AppendInt(append(b, `,"created_at":`...), t.CreatedAt, 10)
	b = strconv.AppendInt(append(b, `,"updated_at":`...), t.UpdatedAt, 10)
	b = appendTaskString(append(b, `,"status":`...), t.Status)
	if len(t.Result) > 0 {
		var ok bool
		if b, ok = appendCompactValue(append(b, `,"result":`...), t.Result); !ok {
			return json.Marshal(t) // its error, or a value nested deeper than appendCompactValue follows
		}
	}
	b = appendTaskInt(b, `,"refreshed_at":`, t.RefreshedAt)
	b = appendTaskInt(b, `,"expires_at":`, t.ExpiresAt)
	b = appendTaskInt(b, `,"finished_at":`, t.FinishedAt)
	b = appendTaskBool(b, `,"active":true`, t.Active)
	b = appendTaskBool(b, `,"finished":true`, t.Finished)
	b = appendTaskInt(b, `,"cost":`, t.Cost)
	b = appendTaskInt(b, `,"held":`, t.Held)
	if t.HoldID != "" {
		b = appendTaskString(append(b, `,"hold_id":`...), t.HoldID)
	}
	b = appendTaskInt(b, `,"hold_amount":`, t.HoldAmount)
	if t.HoldUsage != "" {
		b = appendTaskString(append(b, `,"hold_usage":`...), t.HoldUsage)
	}
	if t.HoldPrice != "" {
		b = appendTaskString(append(b, `,"hold_price":`...), t.HoldPrice)
	}
	if t.CallbackURL != "" {
		b = appendTaskString(append(b, `,"callback_url":`...), t.CallbackURL)
	}
	b = appendTaskBool(b, `,"callback_gone":true`, t.CallbackGone)
	if t.Notified != "" {
		b = appendTaskString(append(b, `,"notified":`...), t.Notified)
	}
	b = appendTaskBool(b, `,"no_last_frame":true`, t.NoLastFrame)
	if len(t.Request) > 0 {
		var ok bool
		if b, ok = appendCompactValue(append(b, `,"request":`...), t.Request); !ok {
			return json.Marshal(t)
		}
	}
	if len(t.Usage) > 0 {
		var ok bool
		if b, ok = appendCompactValue(append(b, `,"usage":`...), t.Usage); !ok {
			return json.Marshal(t)
		}
	}
	if len(t.Keep) > 0 {
		var ok bool
		if b, ok = appendCompactValue(append(b, `,"keep":`...), t.Keep); !ok {
			return json.Marshal(t)
		}
	}
	if t.Endpoint != "" {
		b = appendTaskString(append(b, `,"endpoint":`...), t.Endpoint)
	}
	if t.IdempotencyKey != "" {
		b = appendTaskString(append(b, `,"idempotency_key":`...), t.IdempotencyKey)
	}
	b = appendTaskInt(b, `,"effects":`, t.Effects)
	b = appendTaskInt(b, `,"version":`, t.Version)
	return append(b, '}'), nil
}

// marshalTaskSize is about the length of the record that marshalTask writes (exactly enough
// or a little more, unless its strings need escapes).
func marshalTaskSize(t *Task) int {
	// The keys, quotes and integers that every record has, then its strings and result.
	size := 150 + len(t.ID) + len(t.Kind) + len(t.Account) + len(t.KeyID) + len(t.Provider) + len(t.Upstream) +
		len(t.UpstreamAddress) + len(t.Model) + len(t.Status) + len(t.Result) + len(t.CallbackURL) + len(t.Notified) +
		len(t.UpstreamID) + len(t.Request) + len(t.Usage) + len(t.Keep) + len(t.HoldID) + len(t.HoldUsage) + len(t.HoldPrice) + len(t.Endpoint) + len(t.IdempotencyKey)
	for _, n := range [...]int64{t.RefreshedAt, t.ExpiresAt, t.FinishedAt, t.Cost, t.Held, t.HoldAmount, t.Effects, t.Version} {
		if n != 0 {
			size += 36 // the longest key and the longest integer
		}
	}
	for _, set := range [...]bool{t.Upstream != "", t.UpstreamAddress != "", len(t.Result) > 0, t.Active, t.Finished,
		t.CallbackURL != "", t.CallbackGone, t.Notified != "", t.NoLastFrame, t.UpstreamID != "", len(t.Request) > 0, len(t.Usage) > 0, len(t.Keep) > 0,
		t.HoldID != "", t.HoldUsage != "", t.HoldPrice != "", t.Endpoint != "", t.IdempotencyKey != ""} {
		if set {
			size += 22 // the longest key, quotes, or the longest key and true
		}
	}
	return size
}

// appendTaskString appends s as json.Marshal writes a string: invalid UTF-8 replaced by
// U+FFFD; quote, backslash and control characters escaped; and, for HTML, <, >, &, U+2028 and
// U+2029 escaped too.
func appendTaskString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendTaskInt appends an omitempty integer field (key holds its name and colon).
func appendTaskInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

// appendTaskBool appends an omitempty boolean field (field is its whole encoding when true).
func appendTaskBool(b []byte, field string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, field...)
}

// unmarshalTask is json.Unmarshal of a record into a zero Task.
func unmarshalTask(b []byte) (Task, error) {
	var t Task
	if p := (taskParser{b: b, full: true}); p.parse(&t) {
		p.copyStrings(&t)
		return t, nil
	}
	return unmarshalTaskJSON(b)
}

// unmarshalTaskJSON is unmarshalTask by json.Unmarshal (its own Task, which escapes to the heap).
func unmarshalTaskJSON(b []byte) (Task, error) {
	var t Task
	err := json.Unmarshal(b, &t)
	return t, err
}

// unmarshalTaskHead is json.Unmarshal of a record into a zero taskHead: it copies no string or
// Result that the head does not hold.
func unmarshalTaskHead(b []byte) (taskHead, error) {
	var t Task
	if p := (taskParser{b: b}); p.parse(&t) {
		return taskHead{Kind: t.Kind, Account: t.Account, CreatedAt: t.CreatedAt, Status: t.Status,
			ExpiresAt: t.ExpiresAt, FinishedAt: t.FinishedAt, Finished: t.Finished, Effects: t.Effects, Version: t.Version}, nil
	}
	var h taskHead
	err := json.Unmarshal(b, &h)
	return h, err
}

// taskParser reads a record in the shape that marshalTask writes: an object without whitespace
// whose keys are Task's JSON names, each once, with a value of the field's type (not null). Any
// order of the keys is taken. parse answers false on anything else.
type taskParser struct {
	b []byte
	i int
	// full is set to decode the whole Task; otherwise only taskHead's fields are set (the
	// others are checked, not copied).
	full bool
	seen uint64
	// plain are the strings to copy out of b once it is read, all in one allocation.
	plain  [14]taskString
	nplain int
}

// taskString is a string field (its number in field) and where its value is in the record.
type taskString struct {
	field, start, end int
}

// copyStrings sets the strings of t noted in plain, from one copy of them all.
func (p *taskParser) copyStrings(t *Task) {
	size := 0
	for _, s := range p.plain[:p.nplain] {
		size += s.end - s.start
	}
	var all strings.Builder
	all.Grow(size)
	for _, s := range p.plain[:p.nplain] {
		all.Write(p.b[s.start:s.end])
	}
	str, at := all.String(), 0
	for _, s := range p.plain[:p.nplain] {
		if f := t.stringField(s.field); f != nil {
			*f = str[at : at+s.end-s.start]
		}
		at += s.end - s.start
	}
}

func (p *taskParser) parse(t *Task) bool {
	if len(p.b) < 2 || p.b[0] != '{' {
		return false
	}
	if len(p.b) == 2 {
		return p.b[1] == '}'
	}
	for {
		p.i++ // past the opening brace or a comma
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return false
		}
		start := p.i + 1
		for p.i = start; p.i < len(p.b) && (p.b[p.i] >= 'a' && p.b[p.i] <= 'z' || p.b[p.i] == '_'); p.i++ {
		}
		if p.i+1 >= len(p.b) || p.b[p.i] != '"' || p.b[p.i+1] != ':' {
			return false
		}
		key := p.b[start:p.i]
		p.i += 2
		if !p.field(t, key) || p.i >= len(p.b) {
			return false
		}
		if p.b[p.i] != ',' {
			return p.b[p.i] == '}' && p.i == len(p.b)-1
		}
	}
}

// field reads the value of key into its field of t.
func (p *taskParser) field(t *Task, key []byte) bool {
	switch string(key) {
	case "id":
		return p.str(0, &t.ID, false)
	case "kind":
		return p.str(1, &t.Kind, true)
	case "account":
		return p.str(2, &t.Account, true)
	case "key_id":
		return p.str(3, &t.KeyID, false)
	case "provider":
		return p.str(4, &t.Provider, false)
	case "upstream":
		return p.str(5, &t.Upstream, false)
	case "upstream_address":
		return p.str(6, &t.UpstreamAddress, false)
	case "model":
		return p.str(7, &t.Model, false)
	case "created_at":
		return p.int(8, &t.CreatedAt)
	case "updated_at":
		return p.int(9, &t.UpdatedAt)
	case "status":
		return p.str(10, &t.Status, true)
	case "result":
		return p.result(11, &t.Result)
	case "refreshed_at":
		return p.int(12, &t.RefreshedAt)
	case "expires_at":
		return p.int(13, &t.ExpiresAt)
	case "finished_at":
		return p.int(14, &t.FinishedAt)
	case "active":
		return p.bool(15, &t.Active)
	case "finished":
		return p.bool(16, &t.Finished)
	case "cost":
		return p.int(17, &t.Cost)
	case "held":
		return p.int(18, &t.Held)
	case "hold_id":
		return p.str(27, &t.HoldID, false)
	case "hold_amount":
		return p.int(28, &t.HoldAmount)
	case "hold_usage":
		return p.str(29, &t.HoldUsage, false)
	case "hold_price":
		return p.str(31, &t.HoldPrice, false)
	case "endpoint":
		return p.str(32, &t.Endpoint, false)
	case "idempotency_key":
		return p.str(33, &t.IdempotencyKey, false)
	case "callback_url":
		return p.str(19, &t.CallbackURL, false)
	case "callback_gone":
		return p.bool(20, &t.CallbackGone)
	case "notified":
		return p.str(21, &t.Notified, false)
	case "no_last_frame":
		return p.bool(23, &t.NoLastFrame)
	case "upstream_id":
		return p.str(24, &t.UpstreamID, false)
	case "request":
		return p.result(25, &t.Request)
	case "usage":
		return p.result(26, &t.Usage)
	case "keep":
		return p.result(30, &t.Keep)
	case "effects":
		return p.int(34, &t.Effects)
	case "version":
		return p.int(22, &t.Version)
	}
	return false
}

// stringField is the string field that taskParser.field numbers n, or nil.
func (t *Task) stringField(n int) *string {
	switch n {
	case 0:
		return &t.ID
	case 1:
		return &t.Kind
	case 2:
		return &t.Account
	case 3:
		return &t.KeyID
	case 4:
		return &t.Provider
	case 5:
		return &t.Upstream
	case 6:
		return &t.UpstreamAddress
	case 7:
		return &t.Model
	case 10:
		return &t.Status
	case 19:
		return &t.CallbackURL
	case 21:
		return &t.Notified
	case 24:
		return &t.UpstreamID
	case 27:
		return &t.HoldID
	case 29:
		return &t.HoldUsage
	case 31:
		return &t.HoldPrice
	case 32:
		return &t.Endpoint
	case 33:
		return &t.IdempotencyKey
	}
	return nil // not a string field: taskParser.field numbers them
}

// first reports whether field n is read for the first time (a repeated key is left to
// json.Unmarshal).
func (p *taskParser) first(n int) bool {
	if p.seen&(1<<n) != 0 {
		return false
	}
	p.seen |= 1 << n
	return true
}

// str reads a string into *s (when decoding the whole record, or head says it is a head field).
func (p *taskParser) str(n int, s *string, head bool) bool {
	if !p.first(n) || p.i >= len(p.b) || p.b[p.i] != '"' {
		return false
	}
	start := p.i + 1
	for p.i = start; p.i < len(p.b) && p.b[p.i] != '"' && p.b[p.i] != '\\' && p.b[p.i] >= 0x20 && p.b[p.i] < utf8.RuneSelf; p.i++ {
	}
	if p.i < len(p.b) && p.b[p.i] == '"' {
		switch v, ok := internTaskString(p.b[start:p.i]); {
		case ok:
			*s = v
		case p.full && p.nplain < len(p.plain):
			p.plain[p.nplain] = taskString{n, start, p.i} // set by copyStrings
			p.nplain++
		case p.full || head:
			*s = string(p.b[start:p.i])
		}
		p.i++
		return true
	}
	// An escape, a control character or other than ASCII: the string as json.Unmarshal reads it.
	end, ok := skipValue(p.b, start-1)
	if !ok {
		return false
	}
	var v string
	if json.Unmarshal(p.b[start-1:end], &v) != nil {
		return false
	}
	if p.full || head {
		*s = v
	}
	p.i = end
	return true
}

// internTaskString is string(b) for the usual kinds and statuses, which need no copy.
func internTaskString(b []byte) (string, bool) {
	switch string(b) {
	case "":
		return "", true
	case KindVideo:
		return KindVideo, true
	case KindImage:
		return KindImage, true
	case "queued":
		return "queued", true
	case "running":
		return "running", true
	case "succeeded":
		return "succeeded", true
	case "failed":
		return "failed", true
	case "cancelled":
		return "cancelled", true
	case "expired":
		return "expired", true
	}
	return "", false
}

// int reads an integer that fits an int64, without fraction or exponent, as json.Unmarshal
// reads it into one.
func (p *taskParser) int(n int, v *int64) bool {
	if !p.first(n) || p.i >= len(p.b) {
		return false
	}
	neg := p.b[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	var u uint64
	for ; p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9'; p.i++ {
		u = u*10 + uint64(p.b[p.i]-'0')
	}
	digits := p.i - start
	switch {
	case digits == 0 || digits > 19 || digits > 1 && p.b[start] == '0':
		return false // not a JSON number, or one this does not read
	case neg && u > math.MaxInt64+1, !neg && u > math.MaxInt64:
		return false // json.Unmarshal's error
	case neg:
		*v = -int64(u)
	default:
		*v = int64(u)
	}
	return true
}

// bool reads true or false.
func (p *taskParser) bool(n int, v *bool) bool {
	if !p.first(n) {
		return false
	}
	rest := p.b[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		*v = true
		p.i += 4
	case len(rest) >= 5 && string(rest[:5]) == "false":
		*v = false
		p.i += 5
	default:
		return false
	}
	return true
}

// result reads any JSON value but null, kept as it is written (json.RawMessage).
func (p *taskParser) result(n int, v *json.RawMessage) bool {
	if !p.first(n) || p.i >= len(p.b) || p.b[p.i] == 'n' {
		return false
	}
	end, ok := skipValue(p.b, p.i)
	if !ok {
		return false
	}
	if p.full {
		*v = append(json.RawMessage(nil), p.b[p.i:end]...)
	}
	p.i = end
	return true
}
