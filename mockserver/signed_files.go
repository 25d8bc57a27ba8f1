package mockserver

// Signed file URLs (docs/mock/annotations.md#signed-urls): the mock serves every
// /files/ URL it hands out, as Dify's files blueprint does
// (api/controllers/files/image_preview.py, tool_files.py): at the API
// host's root, outside /v1, without an API key, the signature being the
// credential.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// filesAccessTimeout is FILES_ACCESS_TIMEOUT's default
// (api/configs/feature/__init__.py FileAccessConfig): a signed URL verifies
// while now - timestamp <= 300 s.
const filesAccessTimeout = 300

// maxToolFileIDs bounds how many replayed tool file ids the mock remembers
// (toolFileIndex): each entry is an id and two pointers, so the bound is a
// few MiB however many turns are replayed. The oldest is forgotten first;
// its URL then answers as an unknown file.
const maxToolFileIDs = 1 << 16

// Signature kinds: the first field of the signed message. Tool files are
// signed as "file-preview" too (api/core/tools/signature.py).
const (
	signFilePreview  = "file-preview"
	signImagePreview = "image-preview"
)

// signedFiles signs the mock's /files/ URLs with a per-server secret (Dify:
// SECRET_KEY) as api/core/file/helpers.py and api/core/tools/signature.py
// do, verifies them, and remembers which tool file each replayed id is.
type signedFiles struct {
	key []byte
	now func() time.Time

	mu    sync.Mutex
	tools map[string]replay.BoundToolFile
	order []string // ring of ids in tools, oldest at next
	next  int
}

func newSignedFiles(now func() time.Time) *signedFiles {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return &signedFiles{key: key, now: now, tools: map[string]replay.BoundToolFile{}}
}

// sign is base64.urlsafe_b64encode(hmac_sha256(SECRET_KEY,
// "<kind>|<id>|<timestamp>|<nonce>")). Dify signs the id as str(uuid):
// lower-case.
func (f *signedFiles) sign(kind, id, ts, nonce string) string {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte(kind + "|" + strings.ToLower(id) + "|" + ts + "|" + nonce))
	return base64.URLEncoding.EncodeToString(m.Sum(nil))
}

// params are a timestamp (whole seconds of at), a fresh nonce
// (os.urandom(16).hex()) and the signature for id.
func (f *signedFiles) params(kind, id string, at time.Time) (ts, nonce, sign string) {
	var n [16]byte
	_, _ = rand.Read(n[:])
	ts, nonce = strconv.FormatInt(at.Unix(), 10), hex.EncodeToString(n[:])
	return ts, nonce, f.sign(kind, id, ts, nonce)
}

// FilePreviewURL is get_signed_file_url (api/core/file/helpers.py): the query
// is built with urllib.parse.urlencode, so the signature's "=" padding is
// "%3D". base is FILES_URL: scheme://host; at is the signing time.
func (f *signedFiles) FilePreviewURL(base, id string, at time.Time) string {
	ts, nonce, sign := f.params(signFilePreview, id, at)
	return base + "/files/" + id + "/file-preview?timestamp=" + pyQuotePlus(ts) + "&nonce=" + pyQuotePlus(nonce) + "&sign=" + pyQuotePlus(sign)
}

// ToolFileURL is sign_tool_file (api/core/tools/signature.py): the query is
// an f-string, so the signature goes out as it is, padding and all.
func (f *signedFiles) ToolFileURL(base, id, ext string, at time.Time) string {
	ts, nonce, sign := f.params(signFilePreview, id, at)
	return base + "/files/tools/" + id + "." + ext + "?timestamp=" + ts + "&nonce=" + nonce + "&sign=" + sign
}

// verify is verify_file_signature / verify_image_signature /
// verify_tool_file_signature: the signature must match and the timestamp be
// at most FILES_ACCESS_TIMEOUT seconds old (a future one passes, as in
// Dify).
func (f *signedFiles) verify(kind, id, ts, nonce, sign string) bool {
	if !hmac.Equal([]byte(sign), []byte(f.sign(kind, id, ts, nonce))) {
		return false
	}
	t, err := strconv.ParseInt(ts, 10, 64) // only the mock's own digits get here
	return err == nil && f.now().Unix()-t <= filesAccessTimeout
}

// addTools remembers the tool files a replayed turn hands out.
func (f *signedFiles) addTools(files []replay.BoundToolFile) {
	if len(files) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tf := range files {
		id := strings.ToLower(tf.ID)
		if _, ok := f.tools[id]; ok {
			f.tools[id] = tf
			continue
		}
		if len(f.order) < maxToolFileIDs {
			f.order = append(f.order, id)
		} else {
			delete(f.tools, f.order[f.next])
			f.order[f.next] = id
			f.next = (f.next + 1) % maxToolFileIDs
		}
		f.tools[id] = tf
	}
}

func (f *signedFiles) tool(id string) (replay.BoundToolFile, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tf, ok := f.tools[id]
	return tf, ok
}

// filesBase is the FILES_URL the mock hands out for r: the scheme and host
// the client reached it at.
func filesBase(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// The query models of the files blueprint (FileSignatureQuery,
// FilePreviewQuery in image_preview.py; ToolFileQuery in tool_files.py),
// validated from request.args.to_dict(flat=True).
var (
	signatureFields = []pydantic.Field{
		{Name: "timestamp", Rule: pydantic.StrRule, Required: true},
		{Name: "nonce", Rule: pydantic.StrRule, Required: true},
		{Name: "sign", Rule: pydantic.StrRule, Required: true},
	}
	asAttachmentField  = pydantic.Field{Name: "as_attachment", Rule: pydantic.BoolRule, Default: false}
	fileSignatureQuery = pydantic.Model{Name: "FileSignatureQuery", Fields: signatureFields}
	signedPreviewQuery = pydantic.Model{Name: "FilePreviewQuery", Fields: append(signatureFields[:3:3], asAttachmentField)}
	toolFileQuery      = pydantic.Model{Name: "ToolFileQuery", Fields: append(signatureFields[:3:3], asAttachmentField)}
)

// The files blueprint's errors: FileService raises NotFound for a bad or
// expired signature and for an unknown upload alike; ToolFileApi raises
// Forbidden("Invalid request.") for a bad signature, and its NotFound for a
// missing tool file is caught by its own `except Exception` and re-raised as
// UnsupportedFileTypeError.
var (
	errSignedFileNotFound = newError(http.StatusNotFound, "not_found", "File not found or signature is invalid")
	errToolFileForbidden  = newError(http.StatusForbidden, "forbidden", "Invalid request.")
)

// signedFile is GET /files/:file_id/:action: Flask's
// /files/<uuid:file_id>/file-preview and /image-preview, and
// /files/tools/<uuid:file_id>.<string:extension> (httprouter cannot hold a
// static "tools" segment beside the :file_id wildcard, so one route
// dispatches).
func (s *appServer) signedFile(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	first, action := ps.ByName("file_id"), ps.ByName("action")
	switch {
	case first == "tools":
		s.toolFile(w, r, action)
	case !dify.IsUUID(first):
		writeNotFoundPage(w)
	case action == signFilePreview:
		s.signedFilePreview(w, r, strings.ToLower(first))
	case action == signImagePreview:
		s.signedImagePreview(w, r, strings.ToLower(first))
	default:
		writeNotFoundPage(w)
	}
}

// signedFilePreview is FilePreviewApi.get: FilePreviewQuery, then
// FileService.get_file_generator_by_file_id (signature, then the upload by
// id: no owner or message check), then the same headers as the service
// API's preview (Content-Length, Accept-Ranges, as_attachment).
func (s *appServer) signedFilePreview(w http.ResponseWriter, r *http.Request, id string) {
	q, f, ok := s.verifiedUpload(w, r, signedPreviewQuery, signFilePreview, id)
	if !ok {
		return
	}
	writeUploadBody(w, r, f, q.Bool("as_attachment"), false)
}

// verifiedUpload is what both signed upload routes do first: the query
// model, the signature of kind (timestamp, nonce, sign), then the upload by
// id; an unknown upload answers as a bad signature does. false: the error
// is written.
func (s *appServer) verifiedUpload(w http.ResponseWriter, r *http.Request, model pydantic.Model, kind, id string) (pydantic.Values, store.File, bool) {
	q, errs := model.Validate(pydantic.Query(r.URL.RawQuery))
	if len(errs) > 0 {
		writeError(w, pydanticError(model.Name, errs...))
		return nil, store.File{}, false
	}
	if !s.files.verify(kind, id, q.Str("timestamp"), q.Str("nonce"), q.Str("sign")) {
		writeError(w, errSignedFileNotFound)
		return nil, store.File{}, false
	}
	f, ok := s.signedUpload(id)
	if !ok {
		writeError(w, errSignedFileNotFound)
		return nil, store.File{}, false
	}
	return q, f, true
}

// signedUpload is the upload a signed URL names, by id alone (Dify's
// FileService looks the UploadFile up by id, in any app of the workspace).
// The one place the signed routes read uploads: a server of several apps
// looks in each app's store here.
func (s *appServer) signedUpload(id string) (store.File, bool) {
	if f, ok := s.store.Upload(id); ok {
		return f, true
	}
	for _, a := range s.apps {
		if a != s {
			if f, ok := a.store.Upload(id); ok {
				return f, true
			}
		}
	}
	return store.File{}, false
}

// signedImagePreview is the deprecated ImagePreviewApi.get: the
// image-preview signature, an image extension (else 415
// unsupported_file_type), and the bytes with the upload's mimetype only.
func (s *appServer) signedImagePreview(w http.ResponseWriter, r *http.Request, id string) {
	_, f, ok := s.verifiedUpload(w, r, fileSignatureQuery, signImagePreview, id)
	if !ok {
		return
	}
	if f.Result.Extension == nil || fileCategory(*f.Result.Extension) != dify.FileTypeImage {
		writeError(w, errFileType)
		return
	}
	mimeType := ""
	if f.Result.MimeType != nil {
		mimeType = *f.Result.MimeType
	}
	w.Header().Set("Content-Type", werkzeugContentType(mimeType))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.Content)
	}
}

// toolFile is ToolFileApi.get for "<uuid>.<extension>": ToolFileQuery, the
// signature (403), the tool file (415 when unknown, see above), then
// Content-Type from its mimetype, Content-Length, Content-Disposition for
// as_attachment (the Content-Type stays) and enforce_download_for_html with
// the URL's extension.
func (s *appServer) toolFile(w http.ResponseWriter, r *http.Request, name string) {
	idPart, ext, found := strings.Cut(name, ".")
	if !found || !dify.IsUUID(idPart) || ext == "" {
		writeNotFoundPage(w) // Werkzeug's uuid and string converters do not match
		return
	}
	id := strings.ToLower(idPart)
	q, errs := toolFileQuery.Validate(pydantic.Query(r.URL.RawQuery))
	if len(errs) > 0 {
		writeError(w, pydanticError(toolFileQuery.Name, errs...))
		return
	}
	if !s.files.verify(signFilePreview, id, q.Str("timestamp"), q.Str("nonce"), q.Str("sign")) {
		writeError(w, errToolFileForbidden)
		return
	}
	tf, ok := s.files.tool(id)
	if !ok {
		writeError(w, errFileType)
		return
	}
	h := w.Header()
	var body []byte
	var mimeType, filename string
	if tf.File != nil {
		body, mimeType, filename = tf.File.Data, tf.File.MimeType, tf.File.Name
	} else {
		body, mimeType = synthesizedFile(tf.Ext)
		filename = id + "." + tf.Ext
		h.Set(HeaderSynthesized, "true")
	}
	h.Set("Content-Type", werkzeugContentType(mimeType))
	if len(body) > 0 {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	if q.Bool("as_attachment") && filename != "" {
		h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+pyQuote(filename))
	}
	enforceDownloadForHTML(h, mimeType, filename, ext)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// HeaderSynthesized marks a tool file the mock made up because the cassette
// carries no bytes for it (docs/mock/annotations.md#tool-files).
const HeaderSynthesized = "X-Dify-Mock-Synthesized"

// resignFiles gives a history page's file URLs fresh signatures, as Dify
// signs them when it serializes a message (MessageFile url): the stored
// ones were signed when the turn ran and expire FILES_ACCESS_TIMEOUT later.
// The rows' MessageFiles are copied, never written in place (they share the
// store's arrays).
func (s *appServer) resignFiles(r *http.Request, rows []dify.Message) {
	for i := range rows {
		files := rows[i].MessageFiles
		if len(files) == 0 {
			continue
		}
		out := make([]dify.MessageFile, len(files))
		copy(out, files)
		for j := range out {
			if out[j].URL != nil {
				u := s.resignURL(r, *out[j].URL)
				out[j].URL = &u
			}
		}
		rows[i].MessageFiles = out
	}
}

// resignURL signs a /files/ URL the mock handed out anew: same kind, id and
// extension, behind the host r reached (the mock's FILES_URL). Other URLs
// (remote_url files) are returned unchanged.
func (s *appServer) resignURL(r *http.Request, u string) string {
	rest := u
	if i := strings.Index(u, "/files/"); i > 0 && (strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")) {
		rest = u[i:]
	}
	path, _, _ := strings.Cut(rest, "?")
	if id, ext, ok := cassette.ToolFileURL(path); ok {
		return s.files.ToolFileURL(filesBase(r), id, ext, s.files.now())
	}
	if id, ok := strings.CutSuffix(strings.TrimPrefix(path, "/files/"), "/"+signFilePreview); ok && strings.HasPrefix(path, "/files/") && dify.IsUUID(id) {
		return s.files.FilePreviewURL(filesBase(r), strings.ToLower(id), s.files.now())
	}
	return u
}

// pyQuotePlus is urllib.parse.quote_plus(s) (safe=""), what urlencode
// applies to each key and value: letters, digits and "_.-~" stay, a space is
// "+", every other byte is %XX (upper-case hex).
func pyQuotePlus(s string) string {
	return pyPercent(s, "", true)
}
