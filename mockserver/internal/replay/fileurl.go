package replay

import (
	"bytes"
	"regexp"
	"strings"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// Signed file URLs in recorded frames (docs/api §2.5 message_file, message_end
// files): /files/tools/<id>.<ext>?timestamp=…&nonce=…&sign=… for tool files
// and /files/<id>/file-preview?… for uploads, relative or behind the recorded
// host. Their signatures were made with the recording server's secret and
// expire FILES_ACCESS_TIMEOUT after recording, so each is a slot: a replay
// puts in a URL the mock signed for the replayed id, which it then serves.
// The query may have been written with \u0026 for "&" by a JSON encoder that
// escapes HTML characters; a quote, backslash or space ends the URL.
// filesPath is in every match of fileURLRE.
var filesPath = []byte("/files/")

var fileURLRE = regexp.MustCompile(`(https?://[^/"\s\\]+)?/files/(?:tools/([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})\.([A-Za-z0-9]+)|([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})/file-preview)(?:\?(?:[^"\s\\]|\\u0026)*)?`)

// fileURL is a recorded signed file URL. Relative or behind the recorded
// host, it is replayed behind Binding.FilesURL: the mock acts as a Dify whose
// FILES_URL is its own address, so a browser on another origin (a chat front
// end) reaches the file.
type fileURL struct {
	tool bool   // a tool file (else an upload's file-preview)
	id   string // the recorded file id
	ext  string // tool files: the extension
}

// FileSigner signs the file URLs a replay hands out; base is scheme://host
// (Dify's FILES_URL), at is the signing time the URL's timestamp says.
type FileSigner interface {
	ToolFileURL(base, id, ext string, at time.Time) string
	FilePreviewURL(base, id string, at time.Time) string
}

// BoundToolFile is a tool file a bound turn hands out: its id in this replay,
// its extension, and the cassette's bytes for it (nil when the cassette
// carries none: the mock synthesizes a file of the extension's type).
type BoundToolFile struct {
	ID   string
	Ext  string
	File *cassette.ToolFile
}

func (ct *CompiledTurn) collectFileURLs(raw []byte, offset time.Duration) {
	// The expression has no literal prefix, so the engine would try it at
	// every byte of every frame; nearly no frame holds a file URL.
	if !bytes.Contains(raw, filesPath) {
		return
	}
	for _, m := range fileURLRE.FindAllSubmatch(raw, -1) {
		u := &fileURL{}
		if len(m[2]) > 0 {
			u.tool, u.id, u.ext = true, string(m[2]), string(m[3])
			// A tool file's id is per turn like the message_file event's
			// own id, which is usually the same value.
			ct.addID(slotFresh, u.id)
		} else {
			u.id = string(m[4])
		}
		ct.addSlot(Slot{Kind: slotFileURL, Recorded: string(m[0]), URL: u, Offset: offset})
		ct.fileURLs = true
	}
}

// HasFileURLs reports whether the turn hands out signed /files/ URLs, so a
// replay needs Binding.Files (the mock skips building FilesURL otherwise).
func (ct *CompiledTurn) HasFileURLs() bool { return ct.fileURLs }

// fileURL is a file URL slot's value in this replay: the replayed id, signed
// by the binding's signer as of when its frame goes out at speed 1 (Now +
// the frame's recorded offset), as Dify signs a URL when it emits the event:
// the URL is valid FILES_ACCESS_TIMEOUT after its frame even in a turn that
// runs for minutes (a timestamp ahead of the clock verifies, in Dify too).
// Bind runs once per replay, so this is one HMAC per URL per turn, never
// per frame written. Without a signer (or for a kept turn) the recorded URL
// stays, with the id rebound.
func (b *Bound) fileURL(s Slot) []byte {
	if b.Binding.Keep {
		return []byte(s.Recorded)
	}
	u := s.URL
	id := b.ID(u.id)
	if b.Binding.Files == nil {
		return []byte(strings.Replace(s.Recorded, u.id, id, 1))
	}
	at := b.Binding.Now.Add(s.Offset)
	if u.tool {
		return []byte(b.Binding.Files.ToolFileURL(b.Binding.FilesURL, id, u.ext, at))
	}
	return []byte(b.Binding.Files.FilePreviewURL(b.Binding.FilesURL, id, at))
}

// ToolFiles lists the tool files this replay hands out, for the mock to serve.
func (b *Bound) ToolFiles() []BoundToolFile {
	var out []BoundToolFile
	for _, s := range b.Turn.Slots {
		if s.Kind != slotFileURL || !s.URL.tool {
			continue
		}
		out = append(out, BoundToolFile{ID: b.ID(s.URL.id), Ext: s.URL.ext, File: b.Turn.toolFiles[strings.ToLower(s.URL.id)]})
	}
	return out
}
