// Package integration holds live tests: Caddy runs in-process with the real mediagw modules and is
// configured from Caddyfiles, and clients talk to it over loopback. Caddy is a process-wide
// singleton, so these tests run one after another inside this package.
package integration
