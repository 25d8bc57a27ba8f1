package mockserver

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/internal/bufpool"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
)

const mb = 1 << 20

// Extension categories (docs/api §9.1), lower-case, without the dot.
var extCategories = map[string]string{}

func init() {
	for cat, exts := range map[string]string{
		dify.FileTypeImage:    "jpg jpeg png webp gif svg",
		dify.FileTypeVideo:    "mp4 mov mpeg webm",
		dify.FileTypeAudio:    "mp3 m4a wav amr mpga",
		dify.FileTypeDocument: "txt markdown md mdx pdf html htm xlsx xls docx csv vtt properties doc eml msg pptx xml epub ppt",
	} {
		for _, e := range strings.Fields(exts) {
			extCategories[e] = cat
		}
	}
}

// fileCategory is the Dify file type an extension maps to ("custom" when
// none does).
func fileCategory(ext string) string {
	if c, ok := extCategories[strings.ToLower(ext)]; ok {
		return c
	}
	return dify.FileTypeCustom
}

// sizeLimit is the upload limit in bytes for a category, from the app's
// /parameters.system_parameters (docs/api §14) with Dify's defaults.
func (s *appServer) sizeLimit(category string) int64 {
	sp := s.app.Parameters.SystemParameters
	pick := func(v, def int) int64 {
		if v <= 0 {
			v = def
		}
		return int64(v) * mb
	}
	switch category {
	case dify.FileTypeImage:
		return pick(sp.ImageFileSizeLimit, 10)
	case dify.FileTypeVideo:
		return pick(sp.VideoFileSizeLimit, 100)
	case dify.FileTypeAudio:
		return pick(sp.AudioFileSizeLimit, 50)
	default:
		return pick(sp.FileSizeLimit, 15)
	}
}

// Upload failures (docs/api §9.1).
var (
	errNoFile        = newError(http.StatusBadRequest, "no_file_uploaded", "Please upload your file.")
	errTooManyFiles  = newError(http.StatusBadRequest, "too_many_files", "Only one file is allowed.")
	errNoFilename    = newError(http.StatusBadRequest, "filename_not_exists_error", "The specified filename does not exist.")
	errFileType      = newError(http.StatusUnsupportedMediaType, "unsupported_file_type", "File type not allowed.")
	errFilenameChars = invalidParam("Filename contains invalid characters")
)

// filePart is one file part of a multipart body, read and discarded.
type filePart struct {
	field       string
	filename    string
	contentType string
	size        int64
	over        bool   // larger than limit
	data        []byte // contents of the first `file` part within its limit (docs/api §30 serves them)
}

// multipartForm reads a multipart body in one pass, keeping only sizes and
// the `user` field: uploads are counted, not stored. limitFor gives the
// per-file limit; the whole body is capped at maxBody.
type multipartForm struct {
	files []filePart
	user  string
}

// Werkzeug's form limits, which Dify runs with (Flask's MAX_FORM_PARTS and
// MAX_FORM_MEMORY_SIZE defaults; Dify's config sets neither): at most 1000
// parts, and at most 500,000 bytes in any one non-file field. Either one
// exceeded is RequestEntityTooLarge, which Dify answers with its 413
// request_entity_too_large envelope. They also bound what one request can
// make the mock hold: the part list and one field value.
const (
	maxFormParts      = 1000
	maxFormFieldBytes = 500_000
)

var (
	errBodyTooLarge = errors.New("body too large")
	// errFormTooLarge is a Werkzeug form limit exceeded (too many parts,
	// or a field value too long).
	errFormTooLarge = errors.New("form limits exceeded")
)

func readMultipart(w http.ResponseWriter, r *http.Request, maxBody int64, limitFor func(filename string) int64) (*multipartForm, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	mr, err := r.MultipartReader()
	if err != nil {
		return &multipartForm{}, nil // not multipart: no files (Dify: no_file_uploaded)
	}
	form := &multipartForm{}
	for parts := 1; ; parts++ {
		p, err := mr.NextPart()
		if err == io.EOF {
			return form, nil
		}
		if err != nil {
			return form, bodyErr(err)
		}
		if parts > maxFormParts {
			return form, errFormTooLarge
		}
		_, params, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		filename, isFile := params["filename"]
		field := params["name"]
		if !isFile {
			// Only `user` is kept; other fields are counted, not held.
			dst := io.Discard
			var v strings.Builder
			if field == "user" {
				dst = &v
			}
			n, err := bufpool.Copy(dst, io.LimitReader(p, maxFormFieldBytes+1))
			if err != nil {
				return form, bodyErr(err)
			}
			if n > maxFormFieldBytes {
				return form, errFormTooLarge
			}
			if field == "user" {
				form.user = v.String()
			}
			continue
		}
		fp := filePart{field: field, filename: filename, contentType: p.Header.Get("Content-Type")}
		limit := limitFor(filename)
		var dst io.Writer = io.Discard
		var kept bytes.Buffer
		keep := field == "file" && !form.hasFileData()
		if keep {
			dst = &kept
		}
		n, err := bufpool.Copy(dst, io.LimitReader(p, limit+1))
		fp.size = n
		if keep && n <= limit {
			fp.data = kept.Bytes()
		}
		if err != nil {
			return form, bodyErr(err)
		}
		if n > limit {
			fp.over = true
			// Skip the rest of this part; the body cap still applies.
			if _, err := io.Copy(io.Discard, p); err != nil {
				form.files = append(form.files, fp)
				return form, bodyErr(err)
			}
		}
		form.files = append(form.files, fp)
	}
}

// mimetype is Werkzeug's FileStorage.mimetype for the part, what Dify checks
// and stores as UploadFile.mime_type: the Content-Type without parameters,
// lower-cased ("Image/PNG; name=x" is "image/png").
func (p *filePart) mimetype() string { return cassette.Mimetype(p.contentType) }

// hasFileData reports whether a `file` part's contents are already kept.
func (f *multipartForm) hasFileData() bool {
	for _, p := range f.files {
		if p.field == "file" {
			return true
		}
	}
	return false
}

func bodyErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errBodyTooLarge
	}
	return err
}

// extension is FileService.upload_file's
// os.path.splitext(filename)[1].lstrip(".").lower(): the text after the
// last dot, "" when there is none or the dots only lead the name
// (".bashrc").
func extension(filename string) string {
	i := strings.LastIndexByte(filename, '.')
	if i < 0 {
		return ""
	}
	lead := 0
	for lead < len(filename) && filename[lead] == '.' {
		lead++
	}
	if i < lead {
		return ""
	}
	return strings.ToLower(strings.TrimLeft(filename[i:], "."))
}

// uploadFile is POST /files/upload (docs/api §9.1).
func (s *appServer) uploadFile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	maxLimit := s.sizeLimit(dify.FileTypeVideo)
	for _, c := range []string{dify.FileTypeImage, dify.FileTypeAudio, dify.FileTypeDocument} {
		maxLimit = max(maxLimit, s.sizeLimit(c))
	}
	form, err := readMultipart(w, r, maxLimit+mb, func(name string) int64 { return s.sizeLimit(fileCategory(extension(name))) })
	if err != nil {
		if errors.Is(err, errBodyTimeout) {
			writeError(w, errRequestTimeout)
			return
		}
		if errors.Is(err, errFormTooLarge) {
			writeError(w, errTooLarge)
			return
		}
		if errors.Is(err, errBodyTooLarge) {
			if n := len(form.files); n > 0 && form.files[n-1].field == "file" {
				writeError(w, s.fileTooLarge(form.files[n-1].filename))
				return
			}
			writeError(w, errTooLarge)
			return
		}
		writeError(w, newError(http.StatusBadRequest, "bad_request", "The browser (or proxy) sent a request that this server could not understand."))
		return
	}
	var file *filePart
	for i := range form.files {
		if form.files[i].field == "file" && file == nil {
			file = &form.files[i]
		}
	}
	// api/controllers/service_api/app/file.py FileApi.post, in its order:
	// no "file" key in request.files; more than one key in request.files
	// (a MultiDict: parts sharing a field name count once); the part's
	// mimetype; its filename; then FileService.upload_file (invalid
	// characters, size).
	fields := map[string]bool{}
	for _, f := range form.files {
		fields[f.field] = true
	}
	switch {
	case file == nil:
		writeError(w, errNoFile)
		return
	case len(fields) > 1:
		writeError(w, errTooManyFiles)
		return
	case file.mimetype() == "":
		writeError(w, errFileType)
		return
	case file.filename == "":
		writeError(w, errNoFilename)
		return
	case strings.ContainsAny(file.filename, `/\:*?"<>|`):
		writeError(w, errFilenameChars)
		return
	case file.over:
		writeError(w, s.fileTooLarge(file.filename))
		return
	}
	owner := s.store.EndUser(form.user)
	ext := extension(file.filename)
	id := replay.NewUUID()
	now := s.store.Now()
	mimeType, createdBy, tenant := file.mimetype(), owner.ID, s.tenantID
	res := store.FileResult{
		ID: id, Name: file.filename, Size: file.size, MimeType: &mimeType, CreatedBy: &createdBy,
		CreatedAt: now.Unix(), SourceURL: s.files.FilePreviewURL(filesBase(r), id, now), TenantID: &tenant,
	}
	// UploadFile.extension is a string column: "" when the name has none.
	res.Extension = &ext
	s.store.AddFile(store.File{Result: res, OwnerID: owner.ID, Content: file.data})
	writeJSON(w, http.StatusCreated, res)
}

// fileTooLarge is FileTooLargeError as the newest FileService raises it
// (FileTooLargeError(message="File size exceeds limit")); older releases
// raised it bare, so their message was the class text
// "File size exceeded. {message}" unformatted.
func (s *appServer) fileTooLarge(filename string) *apiError {
	_ = filename
	return newError(http.StatusRequestEntityTooLarge, "file_too_large", "File size exceeds limit")
}

// endUser is GET /end-users/:id (docs/api §10).
func (s *appServer) endUser(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, ok := pathUUID(w, ps, "end_user_id")
	if !ok {
		return
	}
	u, found := s.store.LookupEndUser(id)
	if !found {
		writeError(w, newError(http.StatusNotFound, "end_user_not_found", "End user not found."))
		return
	}
	// EndUserDetail.model_dump(mode="json") of naive sa.DateTime columns:
	// ISO 8601 without a zone, microseconds when there are any.
	ts := isoformat(u.CreatedAt)
	appID := s.appID
	writeJSON(w, http.StatusOK, dify.EndUser{
		ID: u.ID, TenantID: s.tenantID, AppID: &appID, Type: "service-api", ExternalUserID: u.Session,
		IsAnonymous: u.Anonymous, SessionID: u.Session, CreatedAt: ts, UpdatedAt: ts,
	})
}
