package cassette_test

import (
	"net/http"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

func TestParseUploadSummary(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	in := func(version, body string) *vcr.Interaction {
		h := http.Header{}
		if version != "" {
			h.Set(cassette.UploadSummaryHeader, version)
		}
		return &vcr.Interaction{Request: vcr.Request{Body: body, Headers: h}}
	}
	ok := `{"size":300,"files":[{"field":"file","filename":"a.png","content_type":"image/png","size":100,"sha256":"` + hash + `"}]}`
	if s, err := cassette.ParseUploadSummary(in("1", ok)); err != nil || len(s.Files) != 1 || s.Files[0].Size != 100 {
		t.Errorf("valid summary: %+v, %v", s, err)
	}
	// A part sent without a name is described as sent (the fuzzer found
	// the recorder writing such summaries that the loader then refused).
	if _, err := cassette.ParseUploadSummary(in("1", `{"size":300,"files":[{"filename":"0","size":1,"sha256":"`+hash+`"}]}`)); err != nil {
		t.Errorf("a part without a field name: %v", err)
	}
	if cassette.IsUploadSummary(in("", ok)) || !cassette.IsUploadSummary(in("1", ok)) {
		t.Error("IsUploadSummary must follow the header")
	}
	bad := map[string]*vcr.Interaction{
		"version":       in("2", ok),
		"not JSON":      in("1", "--K\r\n"),
		"unknown field": in("1", `{"size":1,"files":[],"bytes":"aGk="}`),
		"upper hex":     in("1", `{"size":300,"files":[{"field":"f","size":1,"sha256":"`+strings.ToUpper(hash)+`"}]}`),
		"short hash":    in("1", `{"size":300,"files":[{"field":"f","size":1,"sha256":"abcd"}]}`),
		"negative":      in("1", `{"size":300,"files":[{"field":"f","size":-1,"sha256":"`+hash+`"}]}`),
		"over body":     in("1", `{"size":10,"files":[{"field":"f","size":11,"sha256":"`+hash+`"}]}`),
	}
	for name, c := range bad {
		if _, err := cassette.ParseUploadSummary(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzParseUploadSummary: any body is refused or yields a summary that
// keeps the documented invariants; never a panic.
func FuzzParseUploadSummary(f *testing.F) {
	f.Add(`{"size":300,"files":[{"field":"file","filename":"a.png","content_type":"image/png","size":100,"sha256":"` + strings.Repeat("0f", 32) + `"}]}`)
	f.Add(`{"size":0,"files":[],"omitted":3,"incomplete":"unexpected EOF"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		in := &vcr.Interaction{Request: vcr.Request{Body: body, Headers: http.Header{cassette.UploadSummaryHeader: {cassette.UploadSummaryVersion}}}}
		s, err := cassette.ParseUploadSummary(in)
		if err != nil {
			return
		}
		if s.Size < 0 || s.Omitted < 0 {
			t.Fatalf("accepted negative counts: %+v", s)
		}
		for _, p := range s.Files {
			if p.Size < 0 || len(p.SHA256) != 64 {
				t.Fatalf("accepted a bad file part: %+v", p)
			}
		}
	})
}
