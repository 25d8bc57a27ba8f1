package cassette_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/cassettes"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

func TestBuiltinSetLoads(t *testing.T) {
	s, err := cassette.LoadFS(cassettes.FS(), "built-in")
	if err != nil {
		t.Fatal(err)
	}
	if s.App == nil || s.App.Info.Mode == "" {
		t.Fatalf("built-in set has no usable app description: %+v", s.App)
	}
	if s.Default == "" || len(s.Names) == 0 {
		t.Fatalf("no default cassette: %+v", s.Names)
	}
	for _, n := range s.Names {
		c, _ := s.Get(n)
		if c.Meta.Provenance == "" {
			t.Errorf("%s: no provenance", n)
		}
		for _, tr := range c.Turns {
			if len(tr.Frames) == 0 {
				t.Errorf("%s: turn %d has no frames", n, tr.Interaction)
			}
		}
	}
}

func TestFramesRoundTrip(t *testing.T) {
	in := []cassette.RecordedFrame{
		{Offset: 0, Raw: []byte("data: {\"a\":1}\n\n")},
		{Offset: 512*time.Millisecond + 250*time.Microsecond, Raw: []byte("event: ping\r\n\r\n")},
		{Offset: 2 * time.Second, Raw: []byte("data: {\"b\":\"\xec\x95\x88\"}\n\n")},
	}
	vals, body := cassette.EncodeFrames(in)
	out, err := cassette.DecodeFrames(vals, body)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("got %d frames", len(out))
	}
	for i := range in {
		if string(out[i].Raw) != string(in[i].Raw) || out[i].Offset != in[i].Offset {
			t.Errorf("frame %d: got %v %q want %v %q", i, out[i].Offset, out[i].Raw, in[i].Offset, in[i].Raw)
		}
	}
}

func TestDecodeFramesRejects(t *testing.T) {
	cases := map[string][]string{
		"decreasing offset": {"10 5", "5 5"},
		"short body":        {"0 100"},
		"bad syntax":        {"zero 5"},
		"leftover bytes":    {"0 3"},
		"negative":          {"-1 10"},
	}
	for name, vals := range cases {
		if _, err := cassette.DecodeFrames(vals, "0123456789"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestValidNameRejectsEscapes(t *testing.T) {
	for _, bad := range []string{"../x", "a/b", `a\b`, "", ".hidden", "UPPER", "a..b", strings.Repeat("a", 101)} {
		if cassette.ValidName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, good := range []string{"plain-answer", "korean_answer", "v1.2"} {
		if err := cassette.ValidName(good); err != nil {
			t.Errorf("%q rejected: %v", good, err)
		}
	}
}

func TestWriteNewNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	if _, err := cassette.WriteNew(dir, "one", []byte("first")); err != nil {
		t.Fatal(err)
	}
	_, err := cassette.WriteNew(dir, "one", []byte("second"))
	if !errors.Is(err, cassette.ErrExists) {
		t.Fatalf("second write: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "one.yaml"))
	if string(b) != "first" {
		t.Fatalf("file was replaced: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestLoadDirReportsLocation(t *testing.T) {
	dir := t.TempDir()
	bad := "version: 1\ndify_mock: {format: 1, kind: chat, provenance: synthesized}\ninteractions:\n- request: {method: POST, url: 'http://x/v1/chat-messages', body: '{\"query\":\"q\"}'}\n  response: {code: 200, body: 'data: {}\n\n', headers: {X-Dify-Mock-Frames: ['0 99']}}\n"
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := cassette.LoadDir(dir)
	if err == nil {
		t.Fatal("broken cassette loaded")
	}
	for _, want := range []string{"broken.yaml", "interaction 0", "frame 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestWriteNewMakesShareableFiles(t *testing.T) {
	p, err := cassette.WriteNew(t.TempDir(), "shared", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", st.Mode().Perm())
	}
}

func TestIsAppDSL(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want bool
	}{
		{"version: \"0.7.0\"\nkind: app\napp: {mode: agent}\n", true},
		{"kind: app\napp:\n  mode: agent-chat\nmodel_config: {}\n", true},
		// An author app scenario: kind app, but info/parameters, no app block.
		{"kind: app\nserver_version: \"1.17.1\"\ninfo: {name: x}\n", false},
		// A cassette.
		{"version: 1\ndify_mock: {format: 1, kind: app}\nkind: app\napp: {mode: agent}\n", false},
		{"kind: workflow\napp: {mode: agent}\n", false},
		{"app: {mode: agent}\n", false},
		{"kind: app\napp: agent\n", false},
		{"not: [yaml\n", false},
	} {
		if got := cassette.IsAppDSL([]byte(c.doc)); got != c.want {
			t.Errorf("IsAppDSL(%q) = %v, want %v", c.doc, got, c.want)
		}
	}
}

// A DSL file in a cassette folder is the app description in another format:
// the loader skips it whatever it is named.
func TestLoadDirSkipsDSLFiles(t *testing.T) {
	dir := t.TempDir()
	dsl := "version: \"0.7.0\"\nkind: app\napp: {mode: agent, name: X}\n"
	if err := os.WriteFile(filepath.Join(dir, "My Agent.yaml"), []byte(dsl), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "cassettes", "plain-answer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain-answer.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := cassette.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if set.App != nil || len(set.Names) != 1 || set.Names[0] != "plain-answer" {
		t.Errorf("app %v, cassettes %v", set.App, set.Names)
	}
}
