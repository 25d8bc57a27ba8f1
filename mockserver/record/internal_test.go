package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

func TestSlug(t *testing.T) {
	cases := map[string]string{
		"Plan a weekend in Seoul": "plan-a-weekend-in-seoul",
		"  What's 2+2?  ":         "what-s-2-2",
		"서울 여행":                   "chat",
		"":                        "chat",
		"app":                     "chat",
		"Tell me everything about the history of the Joseon dynasty please": "tell-me-everything-about-the-history-of",
	}
	for in, want := range cases {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzSlug(f *testing.F) {
	f.Add("Plan a weekend in Seoul")
	f.Add("서울 여행")
	f.Add("---app---")
	f.Fuzz(func(t *testing.T, q string) {
		s := slug(q)
		if err := cassette.ValidName(s); err != nil || s == cassette.AppName {
			t.Fatalf("slug(%q) = %q: %v", q, s, err)
		}
	})
}

func TestParseRule(t *testing.T) {
	r, err := ParseRule(`user-(\d+) => user-$1-x`)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(r.Pattern.ReplaceAll([]byte("id user-42"), []byte(r.Replacement))); got != "id user-42-x" || !r.custom {
		t.Errorf("got %q", got)
	}
	r, err = ParseRule(`[a-z]+@corp\.com`)
	if err != nil || r.Replacement != "[REDACTED]" || r.custom {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{"", " => x", "a(b", "x*"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLoadRuleFileReportsTheLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rules")
	os.WriteFile(p, []byte("# comment\n\nok\r\nbad(\n"), 0o644)
	_, err := LoadRuleFile(p)
	if err == nil || !strings.Contains(err.Error(), p+":4:") {
		t.Fatalf("err %v", err)
	}
}

func TestScrubberHeaders(t *testing.T) {
	s := newScrubber("app-K3yF0rT3stsOnlyZq8Wx2Vb7", nil)
	h := s.header(map[string][]string{
		"Authorization": {"Bearer x"}, "Cookie": {"a=b"}, "Set-Cookie": {"c=d"}, "X-Api-Key": {"k"},
		"Proxy-Authorization": {"p"}, "X-Auth-Token": {"t"}, "Www-Authenticate": {`Bearer realm="api"`},
		"Content-Type": {"application/json"}, "Content-Length": {"10"}, "Connection": {"close"},
		"X-Dify-Mock-Frames": {"0 1"}, "X-Note": {"key app-K3yF0rT3stsOnlyZq8Wx2Vb7"},
	})
	want := map[string]string{"Www-Authenticate": `Bearer realm="api"`, "Content-Type": "application/json", "X-Note": "key [REDACTED]"}
	if len(h) != len(want) {
		t.Errorf("kept %v", h)
	}
	for k, v := range want {
		if h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, h.Get(k), v)
		}
	}
}
