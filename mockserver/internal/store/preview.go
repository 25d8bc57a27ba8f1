package store

import "errors"

// File preview lookups (docs/api §30; Dify's file_preview.py
// FilePreviewApi._validate_file_ownership).
var (
	// ErrFileNotInMessage: no message of the app references the upload.
	ErrFileNotInMessage = errors.New("file not found in message context")
	// ErrUploadNotFound: a message references it but the upload is gone
	// (evicted by the memory bound).
	ErrUploadNotFound = errors.New("upload file record not found")
	// ErrNoContent: the upload was imported from a snapshot, which keeps no
	// contents.
	ErrNoContent = errors.New("no contents kept for this file")
)

// PreviewFile returns an upload for GET /files/{id}/preview: like Dify, it
// must be referenced by a message of the app (sent in a turn of a live
// conversation, any end user's), then exist with its contents. This is the
// one place the contents of uploads are read.
func (s *Store) PreviewFile(id string) (File, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	referenced := false
	for _, c := range s.convs {
		if c.deleted {
			continue
		}
		for _, m := range c.messages {
			for _, mf := range m.msg.MessageFiles {
				if mf.UploadFileID != nil && *mf.UploadFileID == id {
					referenced = true
					break
				}
			}
		}
		if referenced {
			break
		}
	}
	if !referenced {
		return File{}, ErrFileNotInMessage
	}
	f, ok := s.files[id]
	if !ok {
		return File{}, ErrUploadNotFound
	}
	if f.Content == nil && f.Result.Size > 0 {
		return File{}, ErrNoContent
	}
	return *f, nil
}
