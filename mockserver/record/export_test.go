package record

// SetMaxUpload lowers the streamed upload limit so a test can cross it
// without sending 128 MB.
func SetMaxUpload(r *Recorder, n int64) { r.maxUpload = n }

// SetBounds lowers the open sessions' and the waiting interactions' bounds
// (bound.go) so a test can cross them with a few hundred requests.
func SetBounds(r *Recorder, openSessions, pending int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.maxOpen, r.maxPending = openSessions, pending
}

// Held is how many entries each of the recorder's per-session structures
// holds.
func Held(r *Recorder) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return map[string]int{
		"open": r.open.Len(), "reserved": len(r.reserved), "byRequested": len(r.byRequested),
		"byConversation": len(r.byConversation), "byTask": len(r.byTask), "byMessage": len(r.byMessage),
		"lastByUser": len(r.lastByUser), "pending users": len(r.pending), "pending": r.pendingCount,
		"refused": len(r.refused), "written": len(r.written),
	}
}
