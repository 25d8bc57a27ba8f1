package doccheck

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// repoRoot finds the directory holding go.mod above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test directory")
		}
		dir = parent
	}
}

// scanned are the kinds of files that carry citations: code comments,
// docs, cassette and scenario comments, templates.
var scanned = map[string]bool{
	".go": true, ".md": true, ".yaml": true, ".yml": true, ".tmpl": true,
	".sse": true, ".txt": true, ".sh": true, ".ts": true, ".js": true, ".mjs": true,
}

// skippedDirs hold no project text of their own.
var skippedDirs = map[string]bool{".git": true, "node_modules": true, "bin": true, "dist": true}

// TestEveryCitationHasASection walks the repository and fails for every
// "API §n" or "docs/api §n" whose section is not a heading of the reference.
func TestEveryCitationHasASection(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, ReferencePath))
	if err != nil {
		t.Fatal(err)
	}
	sections, err := Sections(doc)
	if err != nil {
		t.Fatalf("%s: %v", ReferencePath, err)
	}

	found, goFiles := 0, 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skippedDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			if rel, _ := filepath.Rel(root, path); rel == filepath.Join("internal", "doccheck") {
				return filepath.SkipDir // its tests are the parser's examples, bare forms included
			}
			return nil
		}
		if !scanned[filepath.Ext(path)] {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, c := range Citations(text) {
			found++
			if filepath.Ext(path) == ".go" {
				goFiles++
			}
			if c.Bare {
				t.Errorf("%s:%d: %q: cite the reference as \"docs/api §%s\" (the bare \"API §\" names no file)", rel, c.Line, c.Text, c.Section)
			}
			if _, ok := sections[c.Section]; !ok {
				t.Errorf("%s:%d: %q cites §%s, which is not a section of %s", rel, c.Line, c.Text, c.Section, ReferencePath)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The code cites the reference in hundreds of places; finding none
	// means the walk or the pattern broke, not that all is well.
	if goFiles == 0 {
		t.Fatalf("found no citations in .go files (%d in all): the scan is broken", found)
	}
	t.Logf("%d citations checked against %d sections", found, len(sections))
}

// TestReferenceAnchorsResolve keeps the reference's table of contents and
// cross-links pointing at real headings.
func TestReferenceAnchorsResolve(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), ReferencePath))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range BrokenAnchors(doc) {
		t.Errorf("%s links to #%s, which is no heading's anchor", ReferencePath, a)
	}
	// Inside the reference a bare "§n" is a cross-reference too.
	sections, err := Sections(doc)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(doc), "\n") {
		for _, n := range bareSection.FindAllStringSubmatch(line, -1) {
			if _, ok := sections[n[1]]; !ok {
				t.Errorf("%s:%d: refers to §%s, which is not a section", ReferencePath, i+1, n[1])
			}
		}
	}
}

var bareSection = regexp.MustCompile(`§(\d+(?:\.\d+)*)`)

// TestReferenceKeepsItsNumbering: the sections the code has cited since the
// first version of the reference must stay, under the same numbers.
func TestReferenceKeepsItsNumbering(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), ReferencePath))
	if err != nil {
		t.Fatal(err)
	}
	sections, err := Sections(doc)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for n := 0; n <= 33; n++ {
		want = append(want, itoa(n))
	}
	want = append(want, "0.1", "0.2", "1.1", "1.2", "1.3", "1.4", "1.5",
		"2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "9.1", "9.2",
		"24.1", "24.2", "24.3", "27.1", "27.2", "27.3", "27.4", "27.5", "27.6",
		"28.1", "28.2", "28.3", "28.4", "29.1", "29.2", "29.3", "29.4", "29.5",
		"31.1", "31.2", "32.1", "32.2", "32.3", "32.4")
	for _, s := range want {
		if _, ok := sections[s]; !ok {
			t.Errorf("%s has no heading for §%s", ReferencePath, s)
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func TestSections(t *testing.T) {
	doc := []byte("# Title\n\n## §1 One\n\n### §1.2 One two\n\n```\n## §9 inside a fence\n```\n\n## §10\n#### §10.1.3 deep\nSee §7 in text.\n## Not numbered §8\n")
	got, err := Sections(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"1": 3, "1.2": 5, "10": 11, "10.1.3": 12}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sections = %v, want %v", got, want)
	}

	if _, err := Sections([]byte("## §2 A\n## §2 B\n")); err == nil {
		t.Error("a duplicated section number was accepted")
	}
}

func TestCitations(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"// see API §2.5.", []string{"2.5"}},
		{"// docs/api §2.5 and more", []string{"2.5"}},
		{"see docs/api/README.md §9.1", []string{"9.1"}},
		{"(API §13–§16)", []string{"13", "16"}},
		{"(API §2.5–2.6)", []string{"2.5", "2.6"}},
		{"API §2.5, §18) instead", []string{"2.5", "18"}},
		{"API §7 and §8", []string{"7", "8"}},
		{"API §9.1, §11", []string{"9.1", "11"}},
		{"limits (API §11, 30 MB)", []string{"11"}},
		{"API §2.5: the error event", []string{"2.5"}},
		{"RFC 9110 §10.2.3 is not ours", nil},
		{"engineering notes §6", nil},
		{"GAPI §3 is another word", nil},
		{"API §2.4–2.5 then API §21", []string{"2.4", "2.5", "21"}},
		{"a limit (docs/api\n// §28.3) across a comment break", []string{"28.3"}},
		{"a bare limit (API\n// §31.2)", []string{"31.2"}},
		{"# docs/api\n# §2.5 in a shell comment", []string{"2.5"}},
	}
	for _, c := range cases {
		var got []string
		for _, ci := range Citations([]byte(c.text)) {
			got = append(got, ci.Section)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Citations(%q) = %v, want %v", c.text, got, c.want)
		}
	}

	cs := Citations([]byte("one\ntwo API §3\n\nfour docs/api §4\n"))
	if len(cs) != 2 || cs[0].Line != 2 || cs[1].Line != 4 {
		t.Errorf("lines = %+v, want §3 on line 2 and §4 on line 4", cs)
	}
}

func TestAnchor(t *testing.T) {
	cases := map[string]string{
		"§0 Scope, sources, versions":              "0-scope-sources-versions",
		"§2.5 Agent stream events":                 "25-agent-stream-events",
		"§3 `POST /chat-messages/{task_id}/stop`":  "3-post-chat-messagestask_idstop",
		"§23 Open questions (first pass)":          "23-open-questions-first-pass",
		"§10 `GET /end-users/{end_user_id}`":       "10-get-end-usersend_user_id",
		"§24.2 Which routes accept which app mode": "242-which-routes-accept-which-app-mode",
	}
	for in, want := range cases {
		if got := Anchor(in); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", in, got, want)
		}
	}
	broken := BrokenAnchors([]byte("## §1 One\n[ok](#1-one) [bad](#2-two)\n"))
	if !reflect.DeepEqual(broken, []string{"2-two"}) {
		t.Errorf("BrokenAnchors = %v, want [2-two]", broken)
	}
}

// outsideReference matches citations of material that is not in the
// repository, which a reader of the repository cannot follow.
var outsideReference = regexp.MustCompile(`dify-agent-api\.md|/work/shared|\.\./shared/|engineering[ -]notes`)

// knownOutsideReferences are the files that still cited outside material
// when this check was added; their citations are being rewritten to
// "docs/api §n". Remove a file's entry once it no longer needs it (the test
// says when); never add one.
var knownOutsideReferences = map[string]bool{}

// TestNoCitationOfOutsideMaterial: the project cites its own docs
// (docs/api §n for Dify's behaviour, §34 for recording and replay
// practice), never reference files that live outside the repository.
func TestNoCitationOfOutsideMaterial(t *testing.T) {
	root := repoRoot(t)
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (skippedDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if !scanned[filepath.Ext(path)] || strings.HasPrefix(rel, "internal/doccheck/") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		loc := outsideReference.FindIndex(text)
		if loc == nil {
			return nil
		}
		seen[rel] = true
		if !knownOutsideReferences[rel] {
			line := 1 + strings.Count(string(text[:loc[0]]), "\n")
			t.Errorf("%s:%d: cites %q, which is not in the repository; cite docs/api §n (see %s) instead",
				rel, line, text[loc[0]:loc[1]], ReferencePath)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range knownOutsideReferences {
		if !seen[rel] {
			t.Errorf("%s no longer cites outside material: delete its entry from knownOutsideReferences", rel)
		}
	}
}

// The bare form is found (so its number is checked) and marked, so the
// repository walk can refuse it.
func TestBareCitationsAreMarked(t *testing.T) {
	for text, want := range map[string]bool{
		"see API §2.5":              true,
		"(API\n// §31.2)":           true,
		"see docs/api §2.5":         false,
		"docs/api/README.md §9.1":   false,
		"(docs/api\n// §28.3 says)": false,
	} {
		c := Citations([]byte(text))
		if len(c) != 1 || c[0].Bare != want {
			t.Errorf("Citations(%q) = %+v, want one with Bare %v", text, c, want)
		}
	}
}

// mdLink matches a Markdown link's target: "](path)" or "](path#anchor)".
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksBetweenDocsResolve: a relative link from one Markdown file to
// another names a file that exists and, with "#anchor", one of its headings
// (bench/results.md's round-by-round notes moved to bench/history.md, and
// such a move must not leave links behind).
func TestLinksBetweenDocsResolve(t *testing.T) {
	root := repoRoot(t)
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) (map[string]bool, error) {
		if a, ok := anchorsOf[path]; ok {
			return a, nil
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := map[string]bool{}
		inFence := false
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inFence = !inFence
				continue
			}
			if m := heading.FindStringSubmatch(line); m != nil && !inFence {
				a[Anchor(m[1])] = true
			}
		}
		anchorsOf[path] = a
		return a, nil
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skippedDirs[d.Name()] || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".md" {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") ||
				filepath.Ext(target) != ".md" {
				continue
			}
			dest := filepath.Join(filepath.Dir(path), target)
			a, err := anchors(dest)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
				continue
			}
			checked++
			if anchor != "" && !a[anchor] {
				t.Errorf("%s links to %s, whose #%s is no heading's anchor", rel, m[1], anchor)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("found no link between Markdown files; is the pattern wrong?")
	}
}
