// Package percent decodes percent escapes (%XX) leniently, as a search for a secret must read
// them: a % that begins no escape is kept as it is, so that a stray one cannot hide the rest.
package percent

// Decode is s with every %XX (either case) decoded to its byte.
func Decode(s string) string {
	decoded, _ := decode(s, false)
	return decoded
}

// Spelled is Decode(s) and, for each byte i of it, at[i], where its spelling begins in s;
// at[len(decoded)] is len(s).
func Spelled(s string) (decoded string, at []int) {
	return decode(s, true)
}

func decode(s string, spans bool) (string, []int) {
	out := make([]byte, 0, len(s))
	var at []int
	if spans {
		at = make([]int, 0, len(s)+1)
	}
	for i := 0; i < len(s); {
		if spans {
			at = append(at, i)
		}
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			out = append(out, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 3
			continue
		}
		out = append(out, s[i])
		i++
	}
	if spans {
		at = append(at, len(s))
	}
	return string(out), at
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// Contains reports whether Decode(s) holds sub, without decoding s: it allocates nothing, for
// searches that run on every request.
func Contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); {
		if decodedPrefix(s[i:], sub) {
			return true
		}
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			i += 3 // the next decoded byte begins after the escape
		} else {
			i++
		}
	}
	return false
}

// decodedPrefix reports whether s begins with sub once its escapes are decoded (as decode reads
// them).
func decodedPrefix(s, sub string) bool {
	i := 0
	for j := 0; j < len(sub); j++ {
		if i >= len(s) {
			return false
		}
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 3
		} else {
			i++
		}
		if c != sub[j] {
			return false
		}
	}
	return true
}
