package providers

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Credentials are the secrets u sends to its upstream, as it sends them: its API key, or its
// Kling secret key and the tokens made of it (the current one, and the one that it replaced,
// which a call made just before the renewal carried). A provider may quote one of them in an
// answer (an error message that echoes the request's header, a debug member), and no such
// answer may reach a client as it is: see Echoes.
func (u *Upstream) Credentials() []string {
	secrets := make([]string, 0, 4)
	for _, s := range u.credentials() {
		if s != "" {
			secrets = append(secrets, s)
		}
	}
	return secrets
}

// Echoes reports whether a JSON answer (body) holds one of u's Credentials in one of its
// strings, as decoded: byte for byte, or spelled with JSON escapes (\u0061 for a, an escape in
// the middle of the key), which any client's decoder reads as the key. It is meant for every
// answer the gateway relays from u, before the answer is decoded. An answer without a backslash
// (every usual one) is only searched, which allocates nothing for a credential of up to 32
// bytes; one with an escape is decoded string by string. A body that is no JSON is searched as
// far as it decodes (and byte for byte).
func (u *Upstream) Echoes(body []byte) bool {
	secrets := u.credentials()
	for _, s := range secrets {
		if s != "" && bytes.Contains(body, []byte(s)) {
			return true
		}
	}
	if bytes.IndexByte(body, '\\') < 0 {
		return false // no escape: every decoded string is a part of body, searched above
	}
	return escapedEcho(body, secrets[:])
}

// escapedEcho reports whether a string of the JSON text body (a member name or a value), as
// decoded, holds one of secrets.
func escapedEcho(body []byte, secrets []string) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // the end (io.EOF), or where the text stops being JSON
		}
		s, ok := tok.(string)
		if !ok {
			continue
		}
		for _, secret := range secrets {
			if secret != "" && strings.Contains(s, secret) {
				return true
			}
		}
	}
}

// credentials are u's secrets, some of them empty.
func (u *Upstream) credentials() [4]string {
	c := [4]string{u.APIKey, u.SecretKey}
	if u.jwt != nil {
		c[2], c[3] = u.jwt.tokens()
	}
	return c
}
