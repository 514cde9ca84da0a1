package providers

import "bytes"

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

// Echoes reports whether body holds one of u's Credentials byte for byte. It is meant for every
// answer the gateway relays from u, before the answer is decoded: it allocates nothing for a
// credential of up to 32 bytes, and the answers that hold none (every usual one) are used as
// they are.
func (u *Upstream) Echoes(body []byte) bool {
	for _, s := range u.credentials() {
		if s != "" && bytes.Contains(body, []byte(s)) {
			return true
		}
	}
	return false
}

// credentials are u's secrets, some of them empty.
func (u *Upstream) credentials() [4]string {
	c := [4]string{u.APIKey, u.SecretKey}
	if u.jwt != nil {
		c[2], c[3] = u.jwt.tokens()
	}
	return c
}
