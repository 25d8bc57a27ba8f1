package provider

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/difyops/terraform-provider-dify/dify"
)

func TestUploadCategories(t *testing.T) {
	cases := []struct {
		name  string
		cat   string
		limit int64
	}{
		{"a.PNG", "image", 10 * mb}, {"a.jpeg", "image", 10 * mb}, {"a.svg", "image", 10 * mb},
		{"a.mp4", "video", 100 * mb}, {"a.MOV", "video", 100 * mb},
		{"a.mp3", "audio", 50 * mb}, {"a.wav", "audio", 50 * mb},
		{"a.pdf", "document", 15 * mb}, {"a.md", "document", 15 * mb}, {"noext", "document", 15 * mb},
	}
	for _, tc := range cases {
		cat, limit := uploadCategory(tc.name, defaultSystemParameters)
		if cat != tc.cat || limit != tc.limit {
			t.Errorf("%s: got %s/%d, want %s/%d", tc.name, cat, limit, tc.cat, tc.limit)
		}
	}
	// The server's own limits win; zero falls back to the default.
	_, limit := uploadCategory("a.png", dify.SystemParameters{ImageFileSizeLimit: 2})
	if limit != 2*mb {
		t.Errorf("server image limit ignored: %d", limit)
	}
	_, limit = uploadCategory("a.txt", dify.SystemParameters{})
	if limit != 15*mb {
		t.Errorf("zero limit not defaulted: %d", limit)
	}
}

func TestCheckUploadSize(t *testing.T) {
	if err := checkUploadSize("a.png", 10*mb, defaultSystemParameters); err != nil {
		t.Errorf("exactly the limit rejected: %v", err)
	}
	err := checkUploadSize("a.png", 10*mb+1, defaultSystemParameters)
	if err == nil || !strings.Contains(err.Error(), "10 MB") || !strings.Contains(err.Error(), "image") {
		t.Errorf("over the limit: %v", err)
	}
}

func fileModelWith(mod func(*fileModel)) fileModel {
	m := fileModel{Source: types.StringNull(), Content: types.StringNull(), ContentBase64: types.StringNull(), Filename: types.StringNull()}
	mod(&m)
	return m
}

func TestResolvePayload(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(src, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	const helloSHA = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

	p, known, _, err := resolvePayload(fileModelWith(func(m *fileModel) { m.Source = types.StringValue(src) }))
	if err != nil || !known || p.filename != "notes.md" || p.size != 5 {
		t.Fatalf("source: %+v %v %v", p, known, err)
	}
	if sum, _ := p.hash(); sum != helloSHA {
		t.Fatalf("source hash %s", sum)
	}

	p, known, _, err = resolvePayload(fileModelWith(func(m *fileModel) {
		m.Content = types.StringValue("hello")
		m.Filename = types.StringValue("x.txt")
	}))
	if sum, _ := p.hash(); err != nil || !known || p.filename != "x.txt" || sum != helloSHA {
		t.Fatalf("content: %+v %v %v", p, known, err)
	}

	p, _, _, err = resolvePayload(fileModelWith(func(m *fileModel) {
		m.ContentBase64 = types.StringValue(base64.StdEncoding.EncodeToString([]byte("hello")))
		m.Filename = types.StringValue("x.bin")
	}))
	if sum, _ := p.hash(); err != nil || sum != helloSHA {
		t.Fatalf("base64: %v %s", err, sum)
	}

	_, _, attr, err := resolvePayload(fileModelWith(func(m *fileModel) { m.Source = types.StringValue(filepath.Join(dir, "missing.md")) }))
	if err == nil || attr != "source" {
		t.Fatalf("missing source: attr=%q err=%v", attr, err)
	}
	_, _, attr, err = resolvePayload(fileModelWith(func(m *fileModel) { m.Source = types.StringValue(dir) }))
	if err == nil || attr != "source" || !strings.Contains(err.Error(), "regular file") {
		t.Fatalf("directory source: attr=%q err=%v", attr, err)
	}
	_, _, attr, err = resolvePayload(fileModelWith(func(m *fileModel) { m.ContentBase64 = types.StringValue("!!") }))
	if err == nil || attr != "content_base64" {
		t.Fatalf("bad base64: attr=%q err=%v", attr, err)
	}
	_, known, _, err = resolvePayload(fileModelWith(func(m *fileModel) { m.Source = types.StringUnknown() }))
	if err != nil || known {
		t.Fatalf("unknown source: known=%v err=%v", known, err)
	}
}

func TestParseConversationImportID(t *testing.T) {
	const id = "c0000000-0000-4000-8000-000000000001"
	cases := []struct{ in, user, id string }{
		{id, "", id},
		{"alice/" + id, "alice", id},
		{"team/alice/" + id, "team/alice", id},
		{" alice/" + id + " ", "alice", id},
	}
	for _, tc := range cases {
		user, got, err := parseConversationImportID(tc.in)
		if err != nil || user != tc.user || got != tc.id {
			t.Errorf("%q: got %q %q %v", tc.in, user, got, err)
		}
	}
	for bad, says := range map[string]string{
		"":                             "does not end in a conversation id",
		"alice/":                       "does not end in a conversation id",
		"/" + id:                       "empty user",
		"a b":                          "not a Dify conversation id",
		"alice/yesterday":              `"yesterday" after the last slash is not a Dify conversation id`,
		"frontdesk/" + id + "/extra":   `did you mean "frontdesk/` + id + `"`,
		"frontdesk/" + id + "/extra/x": `is followed by "/extra/x"`,
	} {
		_, _, err := parseConversationImportID(bad)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%q: error %v, want it to say %q", bad, err, says)
		}
	}
}

func TestStringMapRendersNonStrings(t *testing.T) {
	m := stringMap(map[string]any{"s": "x", "n": 3.0, "o": map[string]any{"a": true}})
	got := m.Elements()
	if got["s"].(types.String).ValueString() != "x" || got["n"].(types.String).ValueString() != "3" ||
		got["o"].(types.String).ValueString() != `{"a":true}` {
		t.Fatalf("got %v", got)
	}
}
