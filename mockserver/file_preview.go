package mockserver

import (
	"errors"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

// filePreviewQuery is FilePreviewQuery
// (api/controllers/service_api/app/file_preview.py).
var filePreviewQuery = pydantic.Model{Name: "FilePreviewQuery", Fields: []pydantic.Field{
	{Name: "as_attachment", Rule: pydantic.BoolRule, Default: false},
}}

// previewFile is GET /files/:file_id/preview (docs/api §30), after Dify's
// file_preview.py FilePreviewApi.get: FilePreviewQuery (as_attachment:
// bool), then _validate_file_ownership (a message of this app references
// the upload), then _build_file_response and enforce_download_for_html.
// No app-mode gate; `user` is read but takes no part in access control.
// Messages are the released controller's custom texts.
func (s *appServer) previewFile(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "file_id")
	if !ok {
		return
	}
	q, errs := filePreviewQuery.Validate(pydantic.Query(r.URL.RawQuery))
	if len(errs) > 0 {
		writeError(w, pydanticError(filePreviewQuery.Name, errs...))
		return
	}
	asAttachment := q.Bool("as_attachment")
	f, err := s.store.PreviewFile(id)
	switch {
	case errors.Is(err, store.ErrFileNotInMessage) && s.fileInAnotherApp(id):
		writeError(w, newError(http.StatusForbidden, "file_access_denied", "File access denied: not owned by requesting app"))
		return
	case errors.Is(err, store.ErrFileNotInMessage):
		writeError(w, newError(http.StatusNotFound, "file_not_found", "File not found in message context"))
		return
	case errors.Is(err, store.ErrUploadNotFound):
		writeError(w, newError(http.StatusNotFound, "file_not_found", "Upload file record not found"))
		return
	case errors.Is(err, store.ErrNoContent):
		writeError(w, newError(http.StatusNotFound, "file_not_found",
			"Failed to load file content: dify-mock keeps no contents for files imported from a state snapshot"))
		return
	case err != nil:
		writeError(w, errInternal)
		return
	}
	writeUploadBody(w, r, f, asAttachment, true)
}

// writeUploadBody answers with an upload's bytes as Dify's preview
// controllers do (service API file_preview.py _build_file_response and the
// files blueprint's FilePreviewApi): Response(mimetype=upload.mime_type),
// Content-Length when the size is known, Accept-Ranges for audio and video,
// as_attachment's Content-Disposition with an octet-stream Content-Type,
// then enforce_download_for_html. The service API adds a one-hour
// Cache-Control (cache).
func writeUploadBody(w http.ResponseWriter, r *http.Request, f store.File, asAttachment, cache bool) {
	res := f.Result
	mimeType := ""
	if res.MimeType != nil {
		mimeType = *res.MimeType
	}
	h := w.Header()
	h.Set("Content-Type", werkzeugContentType(mimeType))
	if res.Size > 0 {
		h.Set("Content-Length", strconv.FormatInt(res.Size, 10))
	}
	switch mimeType {
	case "audio/mpeg", "audio/wav", "audio/mp4", "audio/ogg", "audio/flac", "audio/aac",
		"video/mp4", "video/webm", "video/quicktime", "audio/x-m4a":
		h.Set("Accept-Ranges", "bytes")
	}
	if asAttachment && res.Name != "" {
		h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+pyQuote(res.Name))
		h.Set("Content-Type", "application/octet-stream")
	}
	ext := ""
	if res.Extension != nil {
		ext = *res.Extension
	}
	enforceDownloadForHTML(h, mimeType, res.Name, ext)
	if cache {
		h.Set("Cache-Control", "public, max-age=3600")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.Content)
	}
}

// enforceDownloadForHTML is controllers/common/file_response.py
// enforce_download_for_html: HTML is always an attachment, never rendered on
// the API's origin.
func enforceDownloadForHTML(h http.Header, mimeType, filename, ext string) {
	if !isHTMLContent(mimeType, filename, ext) {
		return
	}
	if filename != "" {
		h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+pyQuote(filename))
	} else {
		h.Set("Content-Disposition", "attachment")
	}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
}

// isHTMLContent is controllers/common/file_response.py is_html_content.
func isHTMLContent(mimeType, filename, ext string) bool {
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(mimeType, ";", 2)[0]))
	if mt == "text/html" || mt == "application/xhtml+xml" {
		return true
	}
	isHTMLExt := func(e string) bool {
		e = strings.ToLower(strings.TrimLeft(e, "."))
		return e == "html" || e == "htm"
	}
	return isHTMLExt(ext) || (filename != "" && isHTMLExt(path.Ext(filename)))
}

// werkzeugContentType is the Content-Type Flask's Response(mimetype=…)
// sends: Werkzeug's get_content_type appends "; charset=utf-8" to text/*
// and a few XML/script types.
func werkzeugContentType(mimeType string) string {
	switch {
	case mimeType == "":
		return "text/plain; charset=utf-8" // Response's default mimetype
	case strings.HasPrefix(mimeType, "text/"),
		mimeType == "application/ecmascript", mimeType == "application/javascript", mimeType == "application/sql",
		mimeType == "application/xml", mimeType == "application/xml-dtd", mimeType == "application/xml-external-parsed-entity",
		strings.HasPrefix(mimeType, "application/") && strings.HasSuffix(mimeType, "+xml"):
		if !strings.Contains(mimeType, "charset") {
			return mimeType + "; charset=utf-8"
		}
	}
	return mimeType
}

// pyQuote is Python's urllib.parse.quote(s) (safe="/"): every byte except
// letters, digits, "_.-~" and "/" percent-encoded, upper-case hex.
func pyQuote(s string) string {
	return pyPercent(s, "/", false)
}

// pyPercent is urllib.parse.quote (plus: quote_plus, where a space is "+")
// with the given safe characters besides letters, digits and "_.-~".
func pyPercent(s, safe string, plus bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_.-~", c) >= 0 || strings.IndexByte(safe, c) >= 0:
			b.WriteByte(c)
		case plus && c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}
