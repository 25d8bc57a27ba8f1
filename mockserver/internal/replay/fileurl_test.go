package replay

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// stubSigner writes recognisable URLs so a test sees what was signed.
type stubSigner struct{}

func (stubSigner) ToolFileURL(base, id, ext string, at time.Time) string {
	return base + "/files/tools/" + id + "." + ext + "?signed=tool@" + strconv.FormatInt(at.Unix(), 10)
}
func (stubSigner) FilePreviewURL(base, id string, at time.Time) string {
	return base + "/files/" + id + "/file-preview?signed=preview@" + strconv.FormatInt(at.Unix(), 10)
}

// Every signed /files/ URL of a recorded frame, relative or behind the
// recorded host, with & or \u0026, becomes the binding's URL for the
// replayed id; the tool file is listed for the mock to serve.
func TestFileURLsAreResigned(t *testing.T) {
	const (
		toolID = "e0000000-0000-4000-8000-000000000021"
		upID   = "f0000000-0000-4000-8000-000000000031"
	)
	frame := `data: {"event":"message_file","conversation_id":"c0000000-0000-4000-8000-000000000001","message_id":"a0000000-0000-4000-8000-000000000002","created_at":1,"task_id":"b0000000-0000-4000-8000-000000000003",` +
		`"id":"` + toolID + `","type":"image","belongs_to":"assistant","url":"https://dify.example.com/files/tools/` + toolID + `.png?timestamp=1\u0026nonce=abc\u0026sign=xyz=",` +
		`"files":[{"id":"x0000000-0000-4000-8000-000000000009","upload_file_id":"` + upID + `","url":"/files/` + upID + `/file-preview?timestamp=1&nonce=n&sign=s%3D"}]}` + "\n\n"
	c := &cassette.Cassette{Name: "t", Path: "t", ToolFiles: map[string]*cassette.ToolFile{toolID: {ID: toolID, Data: []byte("png")}},
		Turns: []*cassette.RecordedTurn{{Status: 200, Frames: []cassette.RecordedFrame{{Offset: 7 * time.Minute, Raw: []byte(frame)}}}}}
	sc, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	b := sc.Turns[0].Bind(Binding{ConversationID: "conv", MessageID: "msg", TaskID: "task", Now: time.Unix(100, 0),
		Files: stubSigner{}, FilesURL: "http://mock:5001"})
	out := string(b.Render(nil, 0))
	newID := b.ID(toolID)
	if newID == toolID {
		t.Fatal("tool file id not rebound")
	}
	for _, want := range []string{
		`"id":"` + newID + `"`,
		// Signed as of when the frame goes out: 7 minutes into the turn.
		`"url":"http://mock:5001/files/tools/` + newID + `.png?signed=tool@520"`,
		`"url":"http://mock:5001/files/` + b.ID(upID) + `/file-preview?signed=preview@520"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("replayed frame lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "dify.example.com") || strings.Contains(out, "sign=") {
		t.Errorf("a recorded URL or signature survived:\n%s", out)
	}
	tf := b.ToolFiles()
	if len(tf) != 1 || tf[0].ID != newID || tf[0].Ext != "png" || tf[0].File == nil || string(tf[0].File.Data) != "png" {
		t.Errorf("ToolFiles = %+v", tf)
	}
	// A kept (live) turn leaves the URLs as they went out.
	kept := sc.Turns[0].Bind(Binding{Keep: true, Files: stubSigner{}, FilesURL: "http://mock:5001"})
	got := string(kept.Render(nil, 0))
	for _, u := range []string{"https://dify.example.com/files/tools/" + toolID + ".png?timestamp=1\\u0026nonce=abc\\u0026sign=xyz=",
		"/files/" + upID + "/file-preview?timestamp=1&nonce=n&sign=s%3D"} {
		if !strings.Contains(got, u) {
			t.Errorf("kept turn lost %s:\n%s", u, got)
		}
	}
}
