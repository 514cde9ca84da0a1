// Package docs is the documentation of mediagw: README.md at the repository's root is its front
// door, and the pages of this directory are the reference. The package has no code; its tests
// keep the documentation's relative links pointing at files and headings that exist, and the
// README's test command the one CI runs.
package docs
