package mockserver_test

import (
	"testing"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver"
)

// Encodes file_preview.py FilePreviewApi.get, _validate_file_ownership and
// _build_file_response with enforce_download_for_html (docs/api §30): the
// uploaded bytes come back once a message of the app references the
// upload; as_attachment forces a download; no mode gate.
func TestFilePreview(t *testing.T) {
	for _, mode := range []string{dify.ModeAgent, dify.ModeAgentChat} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, mockserver.Config{Mode: mode})
			content := []byte("héllo, preview\n")
			up := e.upload("alice", "résumé notes.txt", "text/plain", content)
			path := "/files/" + up.ID + "/preview"

			// Uploaded but never sent in a turn: MessageFile lookup fails.
			resp, body := e.do("GET", path, nil)
			e.wantError(resp, body, 404, "file_not_found", "File not found in message context")

			e.chatTurn("Count to three", "alice", "files", []map[string]any{
				{"type": "document", "transfer_method": "local_file", "upload_file_id": up.ID}})

			resp, body = e.do("GET", path, nil)
			if resp.StatusCode != 200 || string(body) != string(content) {
				t.Fatalf("preview: %d %q", resp.StatusCode, body)
			}
			for k, want := range map[string]string{
				"Content-Type": "text/plain; charset=utf-8", "Content-Length": "16", "Cache-Control": "public, max-age=3600",
				"Content-Disposition": "", "Accept-Ranges": "",
			} {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			// Another end user of the app may read it too: user is not part of access control.
			resp, body = e.do("GET", path+"?as_attachment=true&user=bob", nil)
			if resp.StatusCode != 200 || string(body) != string(content) ||
				resp.Header.Get("Content-Disposition") != "attachment; filename*=UTF-8''r%C3%A9sum%C3%A9%20notes.txt" ||
				resp.Header.Get("Content-Type") != "application/octet-stream" {
				t.Errorf("attachment: %d %v %q", resp.StatusCode, resp.Header, body)
			}
			// pydantic lax bool: "0" is false.
			if resp, _ := e.do("GET", path+"?as_attachment=0", nil); resp.Header.Get("Content-Disposition") != "" {
				t.Errorf("as_attachment=0 gave %q", resp.Header.Get("Content-Disposition"))
			}
			resp, body = e.do("GET", path+"?as_attachment=maybe", nil)
			e.wantError(resp, body, 400, "invalid_param", pyMsg("FilePreviewQuery", "as_attachment",
				"Input should be a valid boolean, unable to interpret input", "bool_parsing", "'maybe'", "str"))

			resp, body = e.do("GET", "/files/00000000-0000-4000-8000-000000000000/preview", nil)
			e.wantError(resp, body, 404, "file_not_found", "File not found in message context")
			resp, body = e.do("GET", "/files/nope/preview", nil)
			wantHTML404(t, resp, body)
		})
	}
}

// enforce_download_for_html: HTML is never served inline; audio gets
// Accept-Ranges.
func TestFilePreviewHTMLAndMedia(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	page := e.upload("alice", "page.html", "text/html", []byte("<script>x</script>"))
	song := e.upload("alice", "song.mp3", "audio/mpeg", []byte("ID3"))
	e.chatTurn("Count to three", "alice", "files", []map[string]any{
		{"type": "document", "transfer_method": "local_file", "upload_file_id": page.ID},
		{"type": "audio", "transfer_method": "local_file", "upload_file_id": song.ID}})
	resp, _ := e.do("GET", "/files/"+page.ID+"/preview", nil)
	if resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
		resp.Header.Get("Content-Disposition") != "attachment; filename*=UTF-8''page.html" {
		t.Errorf("html: %v", resp.Header)
	}
	resp, body := e.do("GET", "/files/"+song.ID+"/preview", nil)
	if resp.Header.Get("Accept-Ranges") != "bytes" || resp.Header.Get("Content-Type") != "audio/mpeg" || string(body) != "ID3" {
		t.Errorf("audio: %v %q", resp.Header, body)
	}
	// Deleting the conversation deletes its message files.
	_, convs := e.do("GET", "/conversations?user=alice", nil)
	e.do("DELETE", "/conversations/"+decode[dify.ConversationPage](t, convs).Data[0].ID, map[string]any{"user": "alice"})
	resp, body = e.do("GET", "/files/"+song.ID+"/preview", nil)
	e.wantError(resp, body, 404, "file_not_found", "File not found in message context")
}
