package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// mdLink is a link or image of a markdown file: the file, the line it is on and its target.
type mdLink struct {
	file   string
	line   int
	target string
}

var (
	// inlineLink matches [text](target) and ![alt](target), target in <> or bare, with an
	// optional title after it.
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+"[^"]*")?\s*\)`)
	// refDefinition matches a reference definition, [label]: target.
	refDefinition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	// codeSpan matches inline code, whose brackets are no link.
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	// htmlAnchor matches an explicit anchor, <a id="x"> or <a name="x">.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// urlScheme starts an absolute URL (https:, mailto: …), which these tests do not follow.
	urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// readMarkdown returns a markdown file's lines outside fenced code blocks; lines inside a
// fence are empty, so that line numbers stay those of the file.
func readMarkdown(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
			lines[i] = ""
		case fence != "":
			lines[i] = ""
		}
	}
	return lines, nil
}

// relativeLinks returns the links of the markdown file at path that are not absolute URLs.
func relativeLinks(path string) ([]mdLink, error) {
	lines, err := readMarkdown(path)
	if err != nil {
		return nil, err
	}
	var links []mdLink
	for i, line := range lines {
		line = codeSpan.ReplaceAllString(line, "")
		var targets []string
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
		if m := refDefinition.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			target = strings.TrimSuffix(strings.TrimPrefix(target, "<"), ">")
			if target == "" || urlScheme.MatchString(target) || strings.HasPrefix(target, "//") {
				continue
			}
			links = append(links, mdLink{file: path, line: i + 1, target: target})
		}
	}
	return links, nil
}

// headingAnchors returns the anchors GitHub gives the headings of a markdown file: the heading's
// text in lower case, without markup and punctuation (letters, digits, spaces, hyphens and
// underscores stay), spaces turned into hyphens, and -1, -2 … after a repeated one; and the
// explicit <a id> and <a name> anchors.
func headingAnchors(path string) (map[string]bool, error) {
	lines, err := readMarkdown(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range lines {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		trimmed := strings.TrimLeft(line, " ")
		level := len(trimmed) - len(strings.TrimLeft(trimmed, "#"))
		if level == 0 || level > 6 || len(trimmed) > level && trimmed[level] != ' ' {
			continue
		}
		text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(trimmed[level:]), "#"))
		// A link in a heading contributes its text.
		text = inlineLink.ReplaceAllStringFunc(text, func(s string) string {
			return s[strings.Index(s, "[")+1 : strings.LastIndex(s, "](")]
		})
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		anchor := b.String()
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		anchors[anchor] = true
	}
	return anchors, nil
}

// brokenLinks checks the relative links of the markdown files: each must name a file or
// directory that exists, and a link with a #fragment into a markdown file (or into the file
// itself) a heading of it. It returns one message per broken link.
func brokenLinks(files []string) ([]string, error) {
	var broken []string
	anchorsOf := map[string]map[string]bool{}
	for _, file := range files {
		links, err := relativeLinks(file)
		if err != nil {
			return nil, err
		}
		for _, l := range links {
			pathPart, fragment, _ := strings.Cut(l.target, "#")
			if i := strings.IndexByte(pathPart, '?'); i >= 0 {
				pathPart = pathPart[:i]
			}
			target := file
			if pathPart != "" {
				target = filepath.Join(filepath.Dir(file), filepath.FromSlash(pathPart))
			}
			if _, err := os.Stat(target); err != nil {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: no file %s", l.file, l.line, l.target, target))
				continue
			}
			if fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			anchors, ok := anchorsOf[target]
			if !ok {
				if anchors, err = headingAnchors(target); err != nil {
					return nil, err
				}
				anchorsOf[target] = anchors
			}
			if !anchors[fragment] {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s has no heading with the anchor #%s", l.file, l.line, l.target, target, fragment))
			}
		}
	}
	return broken, nil
}
