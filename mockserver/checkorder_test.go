package mockserver_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/difyops/terraform-provider-dify/mockserver"
)

// Requests that fail two of a route's checks get the answer of the check
// Dify makes first.

// TestSuggestedLooksUpTheMessageFirst: an unknown message on an app whose
// suggested questions are off is 404 Message Not Exists.
// (MessageService.get_suggested_questions_after_answer: get_message, then
// the app's setting), not the feature's 403.
func TestSuggestedLooksUpTheMessageFirst(t *testing.T) {
	e := newEnv(t, mockserver.Config{Cassettes: testSet(t, disabledParams)})
	resp, body := e.do(http.MethodGet, "/messages/5d1c6a52-8f0e-4c54-9a43-1f7d2c9e0b11/suggested?user=u", nil)
	e.wantError(resp, body, 404, "not_found", "Message Not Exists.")
}

// TestAudioTypeBeforeSize: AudioService.transcript_asr checks the part's
// MIME type before it reads the file and compares its size, so a file over
// 30 MB of a refused type is 415 unsupported_audio_type, not 413.
func TestAudioTypeBeforeSize(t *testing.T) {
	e := newEnv(t, mockserver.Config{})
	big := io.LimitReader(zeros{}, 30<<20+1)
	resp, body := e.multipart("/audio-to-text", part{field: "file", filename: "a.txt", contentType: "text/plain", data: big})
	e.wantError(resp, body, 415, "unsupported_audio_type", "Audio type not allowed.")
	// The same size as audio is the size error.
	resp, body = e.multipart("/audio-to-text", part{field: "file", filename: "a.mp3", contentType: "audio/mpeg", data: io.LimitReader(zeros{}, 30<<20+1)})
	e.wantError(resp, body, 413, "audio_too_large", "Audio size larger than 30 mb")
}

// TestTextToAudioWantsTextBeforeTheFeature: AudioService.transcript_tts
// raises "Text is required" for a text of None before invoke_tts reads the
// app's text_to_speech setting; a text given meets the setting first.
func TestTextToAudioWantsTextBeforeTheFeature(t *testing.T) {
	e := newEnv(t, mockserver.Config{Cassettes: testSet(t, disabledParams)})
	for _, body := range []map[string]any{{"user": "u"}, {"user": "u", "text": nil}} {
		resp, got := e.do(http.MethodPost, "/text-to-audio", body)
		e.wantError(resp, got, 400, "invalid_param", "Text is required")
	}
	resp, got := e.do(http.MethodPost, "/text-to-audio", map[string]any{"user": "u", "text": "hi"})
	e.wantError(resp, got, 400, "invalid_param", "TTS is not enabled")
	// A message_id is looked up before invoke_tts reads the setting.
	resp, got = e.do(http.MethodPost, "/text-to-audio", map[string]any{"user": "u", "message_id": "5d1c6a52-8f0e-4c54-9a43-1f7d2c9e0b11"})
	e.wantError(resp, got, 404, "not_found", "Message Not Exists.")
}
