package mockserver

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
)

// Speech-to-text limits and failures (docs/api §11).
const maxAudioBytes = 30 * mb

var (
	errNoAudio       = newError(http.StatusBadRequest, "no_audio_uploaded", "Please upload your audio.")
	errAudioTooLarge = newError(http.StatusRequestEntityTooLarge, "audio_too_large", "Audio size larger than 30 mb")
	errAudioType     = newError(http.StatusUnsupportedMediaType, "unsupported_audio_type", "Audio type not allowed.")
	errSTTDisabled   = newError(http.StatusBadRequest, "speech_to_text_disabled", "Speech to text is disabled.")
	errNoFilePart    = newError(http.StatusBadRequest, "bad_request_key_error", msgBadRequest)
)

// audioTypes is the union of the MIME types Dify versions accept (docs/api §11,
// version drift): older servers also took mp4, mpeg and webm.
var audioTypes = map[string]bool{
	"audio/mp3": true, "audio/mp4": true, "audio/mpeg": true, "audio/mpga": true, "audio/m4a": true,
	"audio/x-m4a": true, "audio/wav": true, "audio/x-wav": true, "audio/webm": true, "audio/amr": true,
}

// audioToText is POST /audio-to-text (docs/api §11). The transcript is the
// selected cassette's `transcript` (X-Dify-Mock-Cassette, else the default
// cassette), else a deterministic placeholder naming the file.
func (s *appServer) audioToText(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	cat := s.cat()
	name, e := cat.headerCassette(r)
	if e != nil {
		writeError(w, e)
		return
	}
	form, err := readMultipart(w, r, maxAudioBytes+mb, func(string) int64 { return maxAudioBytes })
	if err != nil {
		if errors.Is(err, errBodyTimeout) {
			writeError(w, errRequestTimeout)
			return
		}
		if errors.Is(err, errFormTooLarge) {
			writeError(w, errTooLarge) // Werkzeug's, before Dify's audio checks
			return
		}
		if errors.Is(err, errBodyTooLarge) {
			writeError(w, errAudioTooLarge)
			return
		}
		writeError(w, newError(http.StatusBadRequest, "bad_request", "The browser (or proxy) sent a request that this server could not understand."))
		return
	}
	var file *filePart
	for i := range form.files {
		if form.files[i].field == "file" {
			file = &form.files[i]
			break
		}
	}
	// api/controllers/service_api/app/audio.py AudioApi.post reads
	// request.files["file"] before anything else: no such part is
	// Werkzeug's BadRequestKeyError (code bad_request_key_error, the
	// BadRequest text outside debug mode). AudioService.transcript_asr then
	// checks the feature, the part, its MIME type and its size.
	if file == nil {
		writeError(w, errNoFilePart)
		return
	}
	if !s.app.Parameters.SpeechToText.Enabled {
		writeError(w, errSTTDisabled)
		return
	}
	// AudioService.transcript_asr: no audio, then the part's MIME type,
	// then the size it reads (a large file of a refused type is a type
	// error).
	if file.size == 0 && file.filename == "" {
		writeError(w, errNoAudio)
		return
	}
	mimeType := strings.ToLower(strings.TrimSpace(strings.SplitN(file.contentType, ";", 2)[0]))
	if !audioTypes[mimeType] {
		writeError(w, errAudioType)
		return
	}
	if file.over {
		writeError(w, errAudioTooLarge)
		return
	}
	s.store.EndUser(form.user)
	if name == "" {
		name = cat.def
	}
	text := cat.scripts[name].Meta.Transcript
	if text == "" {
		text = fmt.Sprintf("This is a placeholder transcript from dify-mock for %q (%d bytes).", file.filename, file.size)
	}
	writeJSON(w, http.StatusOK, dify.AudioText{Text: text})
}

// textToAudioPayload is TextToAudioPayload
// (api/controllers/service_api/app/audio.py).
var textToAudioPayload = pydantic.Model{Name: "TextToAudioPayload", Fields: []pydantic.Field{
	{Name: "message_id", Rule: pydantic.StrRule, Optional: true, Default: ""},
	{Name: "voice", Rule: pydantic.StrRule, Optional: true, Default: ""},
	{Name: "text", Rule: pydantic.StrRule, Optional: true}, // str | None = None
	{Name: "streaming", Rule: pydantic.BoolRule, Optional: true},
}}

// textToAudio is POST /text-to-audio (docs/api §12): silent MP3 audio whose
// length follows the text (60 ms per character, 0.5 s to 10 s).
func (s *appServer) textToAudio(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	user, p, e := readUserPayload(w, r, false, textToAudioPayload)
	if e != nil {
		writeError(w, e)
		return
	}
	msgID, text := p.Str("message_id"), p.Str("text")
	// AudioService.transcript_tts resolves the text first (the message of
	// message_id, else a text of None is "Text is required") and reads
	// the app's setting only in invoke_tts, with a text in hand.
	if strings.TrimSpace(msgID) == "" && !p.Set("text") {
		writeError(w, invalidParam("Text is required"))
		return
	}
	if msgID = strings.ToLower(strings.TrimSpace(msgID)); msgID != "" {
		if !dify.IsUUID(msgID) {
			writeError(w, invalidParam("message_id: Input should be a valid UUID"))
			return
		}
		m, _, err := s.store.Message(msgID, s.store.EndUser(user).ID)
		if err != nil {
			writeError(w, errMessageNotFound)
			return
		}
		text = m.Answer // message_id wins over text (docs/api §12)
	}
	if !s.app.Parameters.TextToSpeech.Enabled {
		writeError(w, invalidParam("TTS is not enabled"))
		return
	}
	if strings.TrimSpace(text) == "" {
		writeError(w, invalidParam("Text is required"))
		return
	}
	d := time.Duration(utf8.RuneCountInString(text)) * 60 * time.Millisecond
	d = min(max(d, 500*time.Millisecond), 10*time.Second)
	audio := silentMP3(d)
	w.Header().Set("Content-Type", "audio/mpeg")
	w.Header().Set("Content-Length", strconv.Itoa(len(audio)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(audio)
}

// silentMP3 returns d of silence as MPEG-1 Layer III frames (44.1 kHz, mono,
// 32 kbit/s, no CRC). A frame whose side information is all zero has no
// Huffman data and decodes to silence; each holds 1152 samples (~26 ms).
func silentMP3(d time.Duration) []byte {
	// Header: sync + MPEG-1 + Layer III + no CRC (FF FB), bitrate index 1
	// (32 kbit/s) + 44.1 kHz + no padding (0x10), mono (0xC0).
	const frameLen = 144 * 32000 / 44100 // 104 bytes
	n := int(d.Seconds()*44100/1152) + 1
	out := make([]byte, n*frameLen)
	for i := 0; i < n; i++ {
		f := out[i*frameLen:]
		f[0], f[1], f[2], f[3] = 0xFF, 0xFB, 0x10, 0xC0
	}
	return out
}
