package billing

import (
	"fmt"
	"strconv"
	"strings"
)

// Encode writes u as a short ASCII string without quotes or backslashes, for a task record
// (storage.Task.HoldUsage): comma-separated name=value pairs of the fields that are set, such
// as "s=5,r=720p,ra=16:9,a=1,q=1". DecodeUsage reads it back.
func (u Usage) Encode() string {
	var b pairs
	for _, f := range usageInts(&u) {
		if *f.v != 0 {
			b.add(f.name, strconv.FormatInt(*f.v, 10))
		}
	}
	for _, f := range usageStrings(&u) {
		if *f.v != "" && safeToken(*f.v) {
			b.add(f.name, *f.v)
		}
	}
	if u.Audio {
		b.add("a", "1")
	}
	if u.Draft {
		b.add("d", "1")
	}
	return b.String()
}

// DecodeUsage reads what Usage.Encode wrote.
func DecodeUsage(s string) (Usage, error) {
	var u Usage
	if s == "" {
		return u, nil
	}
	ints, strs := usageInts(&u), usageStrings(&u)
	for _, pair := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if !ok {
			return Usage{}, fmt.Errorf("usage %q: %q is not name=value", s, pair)
		}
		switch name {
		case "a":
			u.Audio = value == "1"
			continue
		case "d":
			u.Draft = value == "1"
			continue
		}
		found := false
		for _, f := range ints {
			if f.name == name {
				n, err := strconv.ParseInt(value, 10, 64)
				if err != nil {
					return Usage{}, fmt.Errorf("usage %q: %s: %v", s, name, err)
				}
				*f.v, found = n, true
			}
		}
		for _, f := range strs {
			if f.name == name {
				*f.v, found = value, true
			}
		}
		if !found {
			return Usage{}, fmt.Errorf("usage %q: unknown field %q", s, name)
		}
	}
	return u, nil
}

// pairs writes the comma-separated name=value pairs of a codec (Usage.Encode, Price.Encode).
type pairs struct{ strings.Builder }

func (b *pairs) add(name, value string) {
	if b.Len() > 0 {
		b.WriteByte(',')
	}
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(value)
}

type (
	usageInt struct {
		name string
		v    *int64
	}
	usageString struct {
		name string
		v    *string
	}
)

// usageInts and usageStrings name the fields of u for the codec. The names are stored: never
// reuse one for another meaning.
func usageInts(u *Usage) []usageInt {
	return []usageInt{{"s", &u.VideoSeconds}, {"f", &u.VideoFrames}, {"fps", &u.FPS}, {"w", &u.Width}, {"h", &u.Height},
		{"vt", &u.VideoTokens}, {"rv", &u.ReferenceVideoSeconds}, {"n", &u.Images}, {"it", &u.InputTokens},
		{"ot", &u.OutputTokens}, {"q", &u.Requests}}
}

func usageStrings(u *Usage) []usageString {
	return []usageString{{"r", &u.Resolution}, {"ra", &u.Ratio}, {"is", &u.ImageSize}, {"iq", &u.ImageQuality}}
}

// safeToken reports whether s can be stored as a value: printable ASCII without the codec's
// separators, quotes or backslashes. (Resolutions, ratios, sizes and qualities always are; a
// value that is not is left out, and its estimate is the default.)
func safeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == ',' || c == '=' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
