package store

import (
	"container/list"
	"encoding/json"
	"sort"
)

// The store's memory bound. Without one, a mock that runs for days in CI or
// is shared by a team grows with every chat: 300 chats with a 3 MB query
// each held 1.6 GB, never freed.
//
// What counts: each conversation with its messages (and their feedback),
// and each upload (its contents too, once uploads keep them). Sizes are
// estimates: the JSON size of what is stored plus a fixed overhead per
// record, close to what the Go heap holds for it.
//
// The policy when the bound is passed: evict whole conversations and
// uploads, deleted conversations first, then the least recently changed
// (created, continued, renamed), until the total is back under the bound,
// and report each eviction (the server logs it). The record just added is
// never evicted, so a single record larger than the bound is still kept,
// alone. End-user records are small and are not evicted.

// Per-record overheads: map entries, struct headers, index slots.
const (
	conversationOverhead = 512
	messageOverhead      = 768
	fileOverhead         = 512
)

// Eviction reports one record removed to stay under the bound.
type Eviction struct {
	Kind  string // "conversation" or "file"
	ID    string
	Owner string // end-user id
	Bytes int64  // its estimated size
	Total int64  // the store's estimated size after the eviction
	Max   int64
}

// unit is one evictable record in the least-recently-changed list.
type unit struct {
	conv  *Conversation
	file  *File
	bytes int64
}

// SetMaxBytes bounds the store's estimated size (0 or less: unbounded) and
// evicts at once if it is already above it. onEvict, which may be nil, is
// called under the store's lock for each eviction: it must not call the
// store.
func (s *Store) SetMaxBytes(maxBytes int64, onEvict func(Eviction)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxBytes, s.onEvict = maxBytes, onEvict
	s.evict(nil)
}

// Usage is the store's estimated size and its bound (0: unbounded).
func (s *Store) Usage() (bytes, maxBytes int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bytes, s.maxBytes
}

func jsonSize(v any) int64 {
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return int64(len(b))
}

// track adds a new record as the most recently changed.
func (s *Store) track(u *unit) *list.Element {
	if s.lru == nil {
		s.lru = list.New()
	}
	s.bytes += u.bytes
	return s.lru.PushBack(u)
}

// grow adds delta bytes to a tracked record and marks it changed.
func (s *Store) grow(e *list.Element, delta int64) {
	if e == nil {
		return
	}
	e.Value.(*unit).bytes += delta
	s.bytes += delta
	s.lru.MoveToBack(e)
}

// evict removes the least recently changed records until the store fits
// its bound, never keep.
func (s *Store) evict(keep *list.Element) {
	if s.maxBytes <= 0 || s.lru == nil {
		return
	}
	for s.bytes > s.maxBytes {
		e := s.lru.Front()
		if e == keep {
			e = e.Next()
		}
		if e == nil {
			return
		}
		u := s.lru.Remove(e).(*unit)
		s.bytes -= u.bytes
		ev := Eviction{Bytes: u.bytes, Total: s.bytes, Max: s.maxBytes}
		switch {
		case u.conv != nil:
			ev.Kind, ev.ID, ev.Owner = "conversation", u.conv.ID, u.conv.OwnerID
			s.dropConversation(u.conv)
		case u.file != nil:
			ev.Kind, ev.ID, ev.Owner = "file", u.file.Result.ID, u.file.OwnerID
			delete(s.files, u.file.Result.ID)
		}
		if s.onEvict != nil {
			s.onEvict(ev)
		}
	}
}

// dropConversation forgets a conversation, its messages and their feedback.
func (s *Store) dropConversation(c *Conversation) {
	if !c.deleted {
		o := s.owner(c.OwnerID)
		o.byCreated = removeSorted(o.byCreated, createdKey, c.created, c)
		o.byUpdated = removeSorted(o.byUpdated, updatedKey, c.updated, c)
		if len(o.byCreated) == 0 && len(o.byUpdated) == 0 {
			delete(s.owners, c.OwnerID)
		}
	}
	rated := false
	for _, m := range c.messages {
		delete(s.messages, m.msg.ID)
		rated = rated || m.feedback != nil
	}
	if rated {
		kept := s.feedbacks[:0]
		for _, f := range s.feedbacks {
			if f.ConversationID != c.ID {
				kept = append(kept, f)
			}
		}
		clear(s.feedbacks[len(kept):])
		s.feedbacks = kept
	}
	delete(s.convs, c.ID)
}

// untrack forgets a record's accounting when it is removed otherwise.
func (s *Store) untrack(e *list.Element) {
	if e == nil || s.lru == nil {
		return
	}
	s.bytes -= s.lru.Remove(e).(*unit).bytes
}

// account builds the accounting of a store filled directly (Import):
// uploads, then conversations from least to most recently changed.
func (s *Store) account() {
	s.bytes, s.lru = 0, nil
	files := make([]*File, 0, len(s.files))
	for _, f := range s.files {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Result.CreatedAt < files[j].Result.CreatedAt })
	for _, f := range files {
		f.elem = s.track(&unit{file: f, bytes: fileOverhead + jsonSize(f.Result)})
	}
	convs := make([]*Conversation, 0, len(s.convs))
	for _, c := range s.convs {
		convs = append(convs, c)
	}
	sort.Slice(convs, func(i, j int) bool { return convs[i].updated.less(convs[j].updated) })
	for _, c := range convs {
		n := conversationOverhead + jsonSize(c.Conversation)
		for _, m := range c.messages {
			n += messageOverhead + jsonSize(m.msg)
		}
		c.elem = s.track(&unit{conv: c, bytes: n})
	}
}
