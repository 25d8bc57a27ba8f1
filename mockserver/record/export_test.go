package record

// SetMaxUpload lowers the streamed upload limit so a test can cross it
// without sending 128 MB.
func SetMaxUpload(r *Recorder, n int64) { r.maxUpload = n }
