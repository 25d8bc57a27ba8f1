package record

import (
	vcr "github.com/dnaeon/go-vcr/v2/cassette"
)

// What the recorder keeps between requests is bounded, so a hybrid server
// (serve --upstream) that forwards conversations for days holds a bounded
// amount (docs/security.md). A session is open while its conversation may
// still grow its cassette: at most maxOpenSessions are, and opening one
// more closes the least recently used. Closing a session removes every
// index entry that points at it (its cassette name, conversation, message
// and task ids, its users' "last session"), so nothing of it stays once its
// last turn is done. Its cassette is complete: it is written at every saved
// turn.
const (
	// maxOpenSessions: a follow-up rarely comes after a thousand newer
	// conversations (in hybrid mode it still continues upstream, as the
	// mock maps 10,000 conversations, only unsaved). An open session costs
	// about half a kilobyte (TestForwardKeepsABoundedNumberOfSessionsOpen)
	// plus the turns it saved, which --max-new-turns bounds in all.
	maxOpenSessions = 1000
	// maxPendingInteractions bounds the requests (record mode: uploads, or
	// calls of a user with no chat yet) that wait for their user's next
	// chat turn.
	maxPendingInteractions = 1000
	// maxRefusalsKept bounds the refused saves Close returns; each one is
	// also logged when it happens, and those past it are only counted.
	maxRefusalsKept = 100
)

// indexEntry is one entry of an index (Recorder.reserved, byConversation,
// …) that points at a session, kept with the session so that closing it
// removes exactly its entries.
type indexEntry struct {
	index map[string]*session
	key   string
}

// indexLocked points index[key] at s. A closed session is not indexed
// again: a turn still streaming when its session closed must not bring it
// back.
func (r *Recorder) indexLocked(index map[string]*session, key string, s *session) {
	if s.closed || index[key] == s {
		return
	}
	index[key] = s
	s.entries = append(s.entries, indexEntry{index, key})
}

// indexOnce is indexLocked for an id a stream reveals, the first time it
// does (seen holds the ids this stream already gave).
func (r *Recorder) indexOnce(index map[string]*session, key string, s *session, seen map[string]bool) {
	if key == "" || seen[key] {
		return
	}
	seen[key] = true
	r.mu.Lock()
	r.indexLocked(index, key, s)
	r.mu.Unlock()
}

// openLocked adds s as the most recently used open session and closes the
// least recently used ones past the bound.
func (r *Recorder) openLocked(s *session) {
	s.elem = r.open.PushFront(s)
	for r.open.Len() > max(r.maxOpen, 1) {
		r.closeLocked(r.open.Back().Value.(*session))
	}
}

// touchLocked marks s as just used: the last in line to be closed.
func (r *Recorder) touchLocked(s *session) {
	if !s.closed {
		r.open.MoveToFront(s.elem)
	}
}

// closeLocked takes s out of the open sessions and every index, so no
// later request joins it. A turn still streaming into it is saved as
// usual; then nothing refers to it any more.
func (r *Recorder) closeLocked(s *session) {
	for _, e := range s.entries {
		if e.index[e.key] == s {
			delete(e.index, e.key)
		}
	}
	s.entries = nil
	r.open.Remove(s.elem)
	s.closed = true
	if s.hasFile {
		r.logf("cassette %s.yaml is complete: the recorder keeps the %d most recently used conversations open, so a later turn of its conversation is not added to it", s.name, r.maxOpen)
	}
}

// holdLocked keeps in until its user's next chat turn claims it
// (claimPendingLocked). Past maxPending waiting interactions it is not
// kept: it is counted, and Close reports it with those never claimed.
func (r *Recorder) holdLocked(user string, in *vcr.Interaction) {
	if r.pendingCount >= r.maxPending {
		if r.droppedPending == 0 {
			r.logf("%d interactions wait for a chat turn of their user; later ones are not saved until a chat turn claims some", r.maxPending)
		}
		r.droppedPending++
		return
	}
	r.pending[user] = append(r.pending[user], in)
	r.pendingCount++
}
