package store

import (
	"container/list"
	"encoding/json"
	"errors"
	"sort"
	"sync/atomic"

	"github.com/difyops/terraform-provider-dify/dify"
)

// The store's memory bound. Without one, a mock that runs for days in CI or
// is shared by a team grows with every chat: 300 chats with a 3 MB query
// each held 1.6 GB, never freed.
//
// What counts (one account, docs/security.md): each conversation with its
// messages and their feedback (comments included), each upload (its
// contents too, once uploads keep them), each end user, and the app's
// annotations. Sizes are estimates: the JSON size of what is stored plus a
// fixed overhead per record, close to what the Go heap holds for it.
//
// The policy when the bound is passed: evict whole conversations, uploads
// and end users, deleted conversations first, then the least recently
// changed (created, continued, renamed, rated; an end user changes with
// each of its records), until the total is back under the bound. The
// record just added and its end user are never evicted, so a single record
// larger than the bound is still kept, alone. Annotations are the app's
// configuration, not traffic: they are never evicted; one that would not fit
// even with every evictable record gone is refused (ErrStateFull).
//
// Eviction is batched: one pass removes every victim and fixes the indexes
// once, and onEvict gets one summary per pass, so importing a million
// conversations into a small bound costs linear time, not a log line and an
// index shift per conversation.

// Per-record overheads: map entries, struct headers, index slots.
const (
	conversationOverhead = 512
	messageOverhead      = 768
	fileOverhead         = 512
	endUserOverhead      = 384
	feedbackOverhead     = 256
	annotationOverhead   = 512
)

// conversationSize is what a conversation counts for without its
// messages: its fields, and their JSON once a listing has encoded them
// (the store keeps that for the next listing: listingJSON).
func conversationSize(c dify.Conversation) int64 {
	return conversationOverhead + 2*jsonSize(c)
}

// ErrStateFull is an annotation that does not fit the state bound even
// with every evictable record gone.
var ErrStateFull = errors.New("the annotations would pass the state bound (--max-state-bytes)")

// Eviction summarises one eviction pass.
type Eviction struct {
	Conversations, Files, EndUsers int
	// IDs are the first evicted ids, in eviction order (at most maxIDs).
	IDs   []string
	Bytes int64 // estimated bytes freed
	Total int64 // the estimated size after the pass: the account's, shared with other stores
	Max   int64
}

const maxIDs = 100

// Count is the number of records evicted.
func (e Eviction) Count() int { return e.Conversations + e.Files + e.EndUsers }

// unit is one evictable record in the least-recently-changed list.
type unit struct {
	conv  *Conversation
	file  *File
	user  *EndUser
	bytes int64
}

// Account is a memory bound that several stores share: the apps of one
// dify-mock (docs/mock/apps.md). Each store counts its bytes in it; a
// store whose write takes the total over the bound evicts its own least
// recently changed records until the total is back under it (or it has
// nothing left to evict but the record just written). So one app's
// traffic can push the total down only within that app, and an app with
// nothing stored costs nothing. The total is kept atomically: stores
// have locks of their own.
type Account struct {
	max  int64
	used atomic.Int64
}

// NewAccount is a bound of maxBytes (0 or less: unbounded).
func NewAccount(maxBytes int64) *Account { return &Account{max: maxBytes} }

// Usage is every store's estimated size together, and the bound.
func (a *Account) Usage() (bytes, maxBytes int64) { return a.used.Load(), a.max }

// SetMaxBytes bounds the store's estimated size alone (0 or less:
// unbounded) and evicts at once if it is already above it. onEvict, which
// may be nil, is called under the store's lock once per eviction pass: it
// must not call the store.
func (s *Store) SetMaxBytes(maxBytes int64, onEvict func(Eviction)) {
	s.SetAccount(NewAccount(maxBytes), onEvict)
}

// SetAccount makes the store count in a, a bound it may share with other
// stores, and evicts at once if the total is above it. onEvict is as for
// SetMaxBytes.
func (s *Store) SetAccount(a *Account, onEvict func(Eviction)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acct != nil {
		s.acct.used.Add(-s.bytes)
	}
	a.used.Add(s.bytes)
	s.acct, s.maxBytes, s.onEvict = a, a.max, onEvict
	s.evict(nil)
}

// Usage is the store's estimated size and its bound (0: unbounded), which
// other stores may count in too (SetAccount).
func (s *Store) Usage() (bytes, maxBytes int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bytes, s.maxBytes
}

// charge adds delta to the store's bytes and its account's (s.mu held).
func (s *Store) charge(delta int64) {
	s.bytes += delta
	if s.acct != nil {
		s.acct.used.Add(delta)
	}
}

// over reports whether the bound is passed (s.mu held): the account's
// total, which other stores count in too.
func (s *Store) over() bool {
	if s.maxBytes <= 0 {
		return false
	}
	if s.acct != nil {
		return s.acct.used.Load() > s.maxBytes
	}
	return s.bytes > s.maxBytes
}

// jsonSize is len(json.Marshal(v)), counted as the encoder writes instead
// of copied out: the copy was most of the garbage of storing a turn.
func jsonSize(v any) int64 {
	var n byteCount
	if json.NewEncoder(&n).Encode(v) != nil {
		return 0
	}
	return int64(n) - 1 // Encode ends the value with a newline
}

// byteCount is an io.Writer that only counts.
type byteCount int64

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}

func feedbackSize(f *Feedback) int64 {
	if f == nil {
		return 0
	}
	n := feedbackOverhead + int64(len(f.Rating))
	if f.Content != nil {
		n += int64(len(*f.Content))
	}
	return n
}

// annotationSize counts the question twice: its matching vector is about
// as large.
func annotationSize(question, answer string) int64 {
	return annotationOverhead + 2*int64(len(question)) + int64(len(answer))
}

// track adds a new record as the most recently changed.
func (s *Store) track(u *unit) *list.Element {
	if s.lru == nil {
		s.lru = list.New()
	}
	s.charge(u.bytes)
	e := s.lru.PushBack(u)
	s.touchOwner(u)
	return e
}

// grow adds delta bytes to a tracked record and marks it changed.
func (s *Store) grow(e *list.Element, delta int64) {
	if e == nil {
		return
	}
	u := e.Value.(*unit)
	u.bytes += delta
	s.charge(delta)
	s.lru.MoveToBack(e)
	s.touchOwner(u)
}

// touchOwner keeps a record's end user behind it in the list, so an end
// user is evicted only once all its records are.
func (s *Store) touchOwner(u *unit) {
	owner := ""
	switch {
	case u.conv != nil:
		owner = u.conv.OwnerID
	case u.file != nil:
		owner = u.file.OwnerID
	}
	if eu := s.usersID[owner]; eu != nil && eu.elem != nil {
		s.lru.MoveToBack(eu.elem)
	}
}

// ownerElem is the list element of the end user owning keep's record.
func (s *Store) ownerElem(keep *list.Element) *list.Element {
	if keep == nil {
		return nil
	}
	u := keep.Value.(*unit)
	owner := ""
	switch {
	case u.conv != nil:
		owner = u.conv.OwnerID
	case u.file != nil:
		owner = u.file.OwnerID
	}
	if eu := s.usersID[owner]; eu != nil {
		return eu.elem
	}
	return nil
}

// evict removes the least recently changed records until the store fits
// its bound, never keep or its end user, in one pass.
func (s *Store) evict(keep *list.Element) {
	if s.lru == nil || !s.over() {
		return
	}
	keepOwner := s.ownerElem(keep)
	ev := Eviction{Max: s.maxBytes}
	owners := map[string]bool{} // owners whose conversation index lost rows
	rated := false
	e := s.lru.Front()
	for s.over() && e != nil {
		if e == keep || e == keepOwner {
			e = e.Next()
			continue
		}
		next := e.Next()
		u := s.lru.Remove(e).(*unit)
		e = next
		s.charge(-u.bytes)
		ev.Bytes += u.bytes
		id := ""
		switch {
		case u.conv != nil:
			c := u.conv
			ev.Conversations++
			id = c.ID
			c.elem, c.evicted = nil, true
			if !c.deleted {
				owners[c.OwnerID] = true
			}
			for _, m := range c.messages {
				delete(s.messages, m.msg.ID)
				rated = rated || m.feedback != nil
			}
			delete(s.convs, c.ID)
		case u.file != nil:
			ev.Files++
			id = u.file.Result.ID
			delete(s.files, u.file.Result.ID)
		case u.user != nil:
			ev.EndUsers++
			id = u.user.ID
			u.user.elem = nil
			delete(s.users, u.user.Session)
			delete(s.usersID, u.user.ID)
			delete(s.owners, u.user.ID)
		}
		if len(ev.IDs) < maxIDs {
			ev.IDs = append(ev.IDs, id)
		}
	}
	for owner := range owners {
		o := s.owners[owner]
		if o == nil {
			continue
		}
		o.byCreated, o.byUpdated = withoutEvicted(o.byCreated), withoutEvicted(o.byUpdated)
		if len(o.byCreated) == 0 && len(o.byUpdated) == 0 {
			delete(s.owners, owner)
		}
	}
	if rated {
		kept := s.feedbacks[:0]
		for _, f := range s.feedbacks {
			if _, ok := s.convs[f.ConversationID]; ok {
				kept = append(kept, f)
			}
		}
		clear(s.feedbacks[len(kept):])
		s.feedbacks = kept
	}
	ev.Total = s.bytes
	if s.acct != nil {
		ev.Total = s.acct.used.Load() // what the bound is compared with
	}
	if s.onEvict != nil && ev.Count() > 0 {
		s.onEvict(ev)
	}
}

// withoutEvicted drops evicted conversations from an index, keeping its
// order, in place; a slice left far larger than its rows is reallocated
// (slices never shrink on their own).
func withoutEvicted(rows []*Conversation) []*Conversation {
	kept := rows[:0]
	for _, c := range rows {
		if !c.evicted {
			kept = append(kept, c)
		}
	}
	clear(rows[len(kept):])
	if cap(kept) > 64 && len(kept) < cap(kept)/4 {
		kept = append([]*Conversation(nil), kept...)
	}
	return kept
}

// untrack forgets a record's accounting when it is removed otherwise.
func (s *Store) untrack(e *list.Element) {
	if e == nil || s.lru == nil {
		return
	}
	s.charge(-s.lru.Remove(e).(*unit).bytes)
}

// account builds the accounting of a store filled directly (Import):
// uploads, then conversations from least to most recently changed, then
// the end users (each behind its records), then the annotations.
func (s *Store) account() {
	s.charge(-s.bytes)
	s.lru = nil
	files := make([]*File, 0, len(s.files))
	for _, f := range s.files {
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Result.CreatedAt < files[j].Result.CreatedAt })
	for _, f := range files {
		f.elem = s.track(&unit{file: f, bytes: fileOverhead + jsonSize(f.Result) + int64(len(f.Content))})
	}
	convs := make([]*Conversation, 0, len(s.convs))
	for _, c := range s.convs {
		convs = append(convs, c)
	}
	sort.Slice(convs, func(i, j int) bool { return convs[i].updated.less(convs[j].updated) })
	for _, c := range convs {
		n := conversationSize(c.Conversation)
		for _, m := range c.messages {
			n += messageOverhead + messageSize(m.msg) + feedbackSize(m.feedback)
		}
		c.elem = s.track(&unit{conv: c, bytes: n})
	}
	users := make([]*EndUser, 0, len(s.usersID))
	for _, u := range s.usersID {
		users = append(users, u)
	}
	sort.Slice(users, func(i, j int) bool { return users[i].CreatedAt.Before(users[j].CreatedAt) })
	for _, u := range users {
		u.elem = s.track(&unit{user: u, bytes: endUserSize(u)})
	}
	s.ann.bytes = 0
	for _, a := range s.ann.rows {
		s.ann.bytes += annotationSize(a.Question, a.Answer)
	}
	s.charge(s.ann.bytes)
}

func endUserSize(u *EndUser) int64 { return endUserOverhead + int64(len(u.Session)) }

// fitAnnotations reports whether the annotations may grow by delta bytes
// (s.mu held): they must fit the bound with every evictable record gone.
func (s *Store) fitAnnotations(delta int64) bool {
	return s.maxBytes <= 0 || delta <= 0 || s.ann.bytes+delta <= s.maxBytes
}

// chargeAnnotations adds delta to the annotations' bytes and evicts what
// no longer fits (s.mu held).
func (s *Store) chargeAnnotations(delta int64) {
	s.ann.bytes += delta
	s.charge(delta)
	s.evict(nil)
}
