// Package doccheck keeps the project's citations of its own API reference
// (docs/api/README.md) followable: comments and docs cite a section as
// "docs/api §2.5", and every such number must be a section heading of the
// reference. The bare form "API §2.5" (the project's older spelling) is
// found too, and refused: it names no file a reader can open. The package
// only parses; the test next to it walks the repository.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// ReferencePath is the reference's path relative to the repository root.
const ReferencePath = "docs/api/README.md"

// sectionHeading matches a Markdown heading whose text starts with a section
// number: "## §2 …", "### §2.5 …". The number is what citations use.
var sectionHeading = regexp.MustCompile(`^#{1,6}\s+§(\d+(?:\.\d+)*)(?:\s|$)`)

// Sections returns the section numbers of a reference document, mapped to
// the 1-based line of their heading. A number used by two headings is an
// error: a citation would not say which one it means.
func Sections(doc []byte) (map[string]int, error) {
	sections := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(text), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := sectionHeading.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		if first, dup := sections[m[1]]; dup {
			return nil, fmt.Errorf("line %d: section §%s already has a heading on line %d", line, m[1], first)
		}
		sections[m[1]] = line
	}
	return sections, sc.Err()
}

// Citation is one cited section number and where it was found.
type Citation struct {
	Line    int    // 1-based
	Section string // e.g. "2.5"
	Text    string // the whole citation as written, e.g. "docs/api §2.5–2.6"
	// Bare is true for the refused form "API §n", which names no file.
	Bare bool
}

// citation matches a citation of the reference, with the lists and ranges
// the code uses: "docs/api §2.5", "docs/api §13–§16",
// "docs/api/README.md §9.1", "docs/api §2.5–2.6", "docs/api §2.5, §18",
// "docs/api §7 and §8", and the same after the bare word "API". After a
// comma or "and" the next number must carry its own "§", so
// "docs/api §11, 30 MB" cites §11 only. A comment may break the line between
// the word and "§" ("docs/api" at a line's end, "// §2.5" on the next).
var citation = regexp.MustCompile(
	`(?:\bAPI|\bdocs/api(?:/README\.md)?)(?:\s|//|#)+§\d+(?:\.\d+)*` +
		`(?:\s*[–—-]\s*§?\d+(?:\.\d+)*|\s*(?:,|and|&)\s*§\d+(?:\.\d+)*)*`)

var sectionNumber = regexp.MustCompile(`\d+(?:\.\d+)*`)

// Citations returns every section cited in text, one entry per number (a
// range yields its two ends).
func Citations(text []byte) []Citation {
	var out []Citation
	line := 1
	last := 0
	for _, loc := range citation.FindAllIndex(text, -1) {
		line += bytes.Count(text[last:loc[0]], []byte("\n"))
		last = loc[0]
		whole := string(text[loc[0]:loc[1]])
		// Skip the "API"/"docs/api" word itself: it holds no digits, but
		// the numbers come after the first "§".
		nums := whole[strings.Index(whole, "§"):]
		bare := strings.HasPrefix(whole, "API")
		for _, n := range sectionNumber.FindAllString(nums, -1) {
			out = append(out, Citation{Line: line, Section: n, Text: whole, Bare: bare})
		}
	}
	return out
}

// inlineLink matches a same-document link target: "](#slug)".
var inlineLink = regexp.MustCompile(`\]\(#([^)\s]+)\)`)

// heading matches any Markdown heading, to compute its anchor.
var heading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)

// BrokenAnchors returns the same-document links of doc ("](#…)") whose
// target is not the anchor of one of its headings, so the table of contents
// cannot silently rot.
func BrokenAnchors(doc []byte) []string {
	anchors := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil && !inFence {
			anchors[Anchor(m[1])] = true
		}
	}
	var broken []string
	for _, m := range inlineLink.FindAllStringSubmatch(string(doc), -1) {
		if !anchors[m[1]] {
			broken = append(broken, m[1])
		}
	}
	return broken
}

// Anchor returns the id GitHub gives a heading: lower case, spaces become
// hyphens, and everything but letters, digits, "-" and "_" is dropped (so
// "§2.5 `POST /x`" becomes "25-post-x").
func Anchor(headingText string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(headingText) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
