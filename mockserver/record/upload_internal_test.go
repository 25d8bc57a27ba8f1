package record

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// FuzzSummarize: any body is read to its end (the streaming writer never
// blocks), and the summary is well-formed and loads as an upload summary.
func FuzzSummarize(f *testing.F) {
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nu1\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--B--\r\n"))
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nno end"))
	f.Add([]byte("not multipart at all"))
	f.Add([]byte(strings.Repeat("--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n", 300) + "--B--\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		s, form := summarize(r, "B")
		if r.Len() != 0 {
			t.Fatalf("%d bytes left unread", r.Len())
		}
		if s == nil || form == nil {
			t.Fatal("nil summary or form")
		}
		kept := len(s.Files)
		for _, vs := range form {
			kept += len(vs)
		}
		if kept > cassette.MaxUploadSummaryParts {
			t.Fatalf("%d parts kept, over the bound %d", kept, cassette.MaxUploadSummaryParts)
		}
		s.Size = int64(len(data))
		body, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		in := &vcr.Interaction{Request: vcr.Request{Body: string(body), Headers: http.Header{cassette.UploadSummaryHeader: {cassette.UploadSummaryVersion}}}}
		if _, err := cassette.ParseUploadSummary(in); err != nil && s.Incomplete == "" {
			t.Fatalf("the summary of a complete body does not load: %v\n%s", err, body)
		}
	})
}
