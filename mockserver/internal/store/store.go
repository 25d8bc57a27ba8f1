// Package store is dify-mock's in-memory state: end users, uploaded files,
// conversations and messages, scoped per end user as Dify scopes them (docs/api
// §1.3). Every method is safe for concurrent use; values handed out are
// copies, so callers never share memory with the store (but for a
// listing's JSON, which is read only).
package store

import (
	"container/list"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
)

// DefaultUser is the end user of requests that may omit `user` (docs/api §1.3).
const DefaultUser = "DEFAULT-USER"

// DefaultConversationName is a conversation's name until it is generated or
// renamed (docs/api §5; exact Dify string UNCONFIRMED).
const DefaultConversationName = "New conversation"

// Lookup failures.
var (
	ErrConversationNotFound = errors.New("conversation not found")
	ErrLastNotFound         = errors.New("last conversation not found")
	ErrFirstNotFound        = errors.New("first message not found")
	ErrMessageNotFound      = errors.New("message not found")
	ErrNoMessages           = errors.New("conversation has no messages")
)

// EndUser is a Dify end user (docs/api §10).
type EndUser struct {
	ID        string
	Session   string
	Anonymous bool
	CreatedAt time.Time
	elem      *list.Element // in the store's least-recently-changed list
}

// File is an uploaded file (docs/api §9.1).
type File struct {
	Result  FileResult
	OwnerID string // end-user id
	// Content is what was uploaded: GET /files/{id}/preview serves it
	// (docs/api §30). An upload is at most its category's size limit, which
	// bounds one file; the store's memory bound (bound.go) counts it. Nil
	// for files imported from a snapshot, which keeps no contents.
	Content []byte
	elem    *list.Element
}

// FileResult is the POST /files/upload body (docs/api §9.1).
type FileResult = dify.FileUploadResult

// Conversation is a stored conversation plus the replay bookkeeping.
type Conversation struct {
	dify.Conversation
	OwnerID string
	// Cassette and NextTurn say which recorded turn a follow-up replays.
	Cassette string
	NextTurn int
	// AutoName: generate the name from the first query when it completes.
	AutoName bool
	created  key
	updated  key
	deleted  bool
	evicted  bool // removed by the bound; its index rows go in the same pass
	messages []*storedMessage
	elem     *list.Element // in the store's least-recently-changed list
	listing  *listingCache // made with the conversation (NewConversation, Import)
}

// listingCache holds a conversation's JSON as GET /conversations lists it.
// Encoding every row on every listing was most of that route's CPU and
// garbage (BenchmarkListConversationsRequest: 41 µs and 169 allocations
// for 20 rows).
type listingCache struct{ p atomic.Pointer[listing] }

// listing is the JSON and the name and update time it was made from: the
// only fields of a conversation that change once it exists (its id,
// inputs, status, introduction and created_at are set when it is
// created). A listing whose name and update time still match is the
// conversation's JSON; no writer has to remember to drop it.
type listing struct {
	name      string
	updatedAt int64
	json      []byte
}

// listingJSON is c's JSON as listed, made again only when its name or
// update time changed. The caller holds the store's lock (read or write):
// concurrent readers may both encode, and either result is right.
func (c *Conversation) listingJSON() []byte {
	if l := c.listing.p.Load(); l != nil && l.name == c.Name && l.updatedAt == c.UpdatedAt {
		return l.json
	}
	data, err := json.Marshal(c.Conversation)
	if err != nil { // inputs came from JSON: not reached
		return []byte("null")
	}
	c.listing.p.Store(&listing{name: c.Name, updatedAt: c.UpdatedAt, json: data})
	return data
}

// ListedConversation is a row of ListConversations: what the listing's
// order and paging need, and the conversation's JSON as GET /conversations
// lists it, shared with the store: read only.
type ListedConversation struct {
	ID, Name             string
	CreatedAt, UpdatedAt int64
	JSON                 []byte
}

type storedMessage struct {
	msg      dify.Message
	cassette string
	created  key
	ownerID  string
	index    int       // position in its conversation's messages
	feedback *Feedback // the owner's rating (docs/api §25), nil when none
}

// key orders rows: the full-precision time, then insertion order, so rows
// created in the same second never tie (Dify compares database timestamps
// with microsecond precision; docs/api §5 paging uses strict inequality).
type key struct {
	t   time.Time
	seq uint64
}

func (a key) less(b key) bool {
	if !a.t.Equal(b.t) {
		return a.t.Before(b.t)
	}
	return a.seq < b.seq
}

// Store holds all state.
type Store struct {
	mu       sync.RWMutex
	now      func() time.Time
	seq      uint64
	users    map[string]*EndUser // by session
	usersID  map[string]*EndUser // by id
	files    map[string]*File
	convs    map[string]*Conversation // every conversation, deleted ones too
	messages map[string]*storedMessage
	// owners indexes each end user's live conversations, so listing them
	// costs what that user has stored, not what everybody has.
	owners map[string]*ownerIndex
	newID  func() string
	// feedbacks holds every message feedback in creation order (docs/api §26).
	feedbacks []*Feedback
	// The memory bound (bound.go): estimated bytes held, the bound (0 =
	// none), records from least to most recently changed.
	bytes    int64
	maxBytes int64
	acct     *Account // the bound's account, shared with other stores; nil = bytes alone
	lru      *list.List
	onEvict  func(Eviction)
	// ann is the app's annotations and annotation-reply state (docs/api §27–§29).
	ann annotationState
	// annIndex is the annotation matcher's index, derived from ann.
	annIndex annotationMatcher
}

// ownerIndex holds one end user's live (not deleted) conversations twice:
// ordered by created key and by updated key, both ascending. Keys are unique
// (their seq), so a binary search finds a conversation's exact position.
type ownerIndex struct {
	byCreated []*Conversation
	byUpdated []*Conversation
}

func createdKey(c *Conversation) key { return c.created }
func updatedKey(c *Conversation) key { return c.updated }

// search returns the first position in rows (ascending by k) whose key is
// not less than want.
func search(rows []*Conversation, k func(*Conversation) key, want key) int {
	return sort.Search(len(rows), func(i int) bool { return !k(rows[i]).less(want) })
}

// insertSorted puts c at its place; with a clock that only moves forward
// that is the end, so the copy is empty.
func insertSorted(rows []*Conversation, k func(*Conversation) key, c *Conversation) []*Conversation {
	i := len(rows)
	if i > 0 && k(c).less(k(rows[i-1])) {
		i = search(rows, k, k(c))
	}
	rows = append(rows, nil)
	copy(rows[i+1:], rows[i:])
	rows[i] = c
	return rows
}

// removeSorted takes c out, found by its key at the time it was inserted.
func removeSorted(rows []*Conversation, k func(*Conversation) key, was key, c *Conversation) []*Conversation {
	i := search(rows, k, was)
	if i == len(rows) || rows[i] != c {
		return rows // not indexed (cannot happen while the invariants hold)
	}
	copy(rows[i:], rows[i+1:])
	rows[len(rows)-1] = nil
	return rows[:len(rows)-1]
}

func (s *Store) owner(id string) *ownerIndex {
	o := s.owners[id]
	if o == nil {
		o = &ownerIndex{}
		s.owners[id] = o
	}
	return o
}

// touch moves c to updated key k, keeping the owner's index in order.
func (s *Store) touch(c *Conversation, k key) {
	o := s.owner(c.OwnerID)
	o.byUpdated = removeSorted(o.byUpdated, updatedKey, c.updated, c)
	c.updated = k
	c.UpdatedAt = k.t.Unix()
	o.byUpdated = insertSorted(o.byUpdated, updatedKey, c)
}

// New returns an empty store; now may be nil (time.Now), newID generates ids.
func New(now func() time.Time, newID func() string) *Store {
	if now == nil {
		now = time.Now
	}
	s := &Store{
		now: now, newID: newID,
		users: map[string]*EndUser{}, usersID: map[string]*EndUser{},
		files: map[string]*File{}, convs: map[string]*Conversation{}, messages: map[string]*storedMessage{},
		owners: map[string]*ownerIndex{},
	}
	s.ann.changed() // a generation of its own, so no other store's index matches it
	return s
}

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

func (s *Store) nextKey() key {
	s.seq++
	return key{t: s.now(), seq: s.seq}
}

// EndUser returns the end user for session (creating it on first use, as
// Dify does); an empty session is the shared default user.
func (s *Store) EndUser(session string) EndUser {
	anon := false
	if session == "" {
		session, anon = DefaultUser, true
	}
	s.mu.RLock()
	u, ok := s.users[session]
	s.mu.RUnlock()
	if ok {
		return *u
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.users[session]; ok {
		return *u
	}
	// A copy: session is often a slice of the request line (a query
	// parameter), which it would otherwise keep alive whole.
	session = strings.Clone(session)
	u = &EndUser{ID: s.newID(), Session: session, Anonymous: anon || session == DefaultUser, CreatedAt: s.now()}
	s.users[session] = u
	s.usersID[u.ID] = u
	u.elem = s.track(&unit{user: u, bytes: endUserSize(u)})
	s.evict(u.elem)
	return *u
}

// LookupEndUser finds an end user by id (never creates one).
func (s *Store) LookupEndUser(id string) (EndUser, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.usersID[id]
	if !ok {
		return EndUser{}, false
	}
	return *u, true
}

// AddFile stores an upload.
func (s *Store) AddFile(f File) {
	size := fileOverhead + jsonSize(f.Result) + int64(len(f.Content)) // before the lock, as in AddMessage
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.files[f.Result.ID]; ok && old.elem != nil {
		s.charge(-s.lru.Remove(old.elem).(*unit).bytes)
	}
	fp := &f
	fp.elem = s.track(&unit{file: fp, bytes: size})
	s.files[f.Result.ID] = fp
	s.evict(fp.elem)
}

// File returns an upload owned by ownerID.
func (s *Store) File(id, ownerID string) (File, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.files[id]
	if !ok || f.OwnerID != ownerID {
		return File{}, false
	}
	return *f, true
}

// Upload is an upload by id alone, whoever owns it: the signed
// /files/{id}/file-preview URL is its own credential (Dify's
// FileService.get_file_generator_by_file_id looks the UploadFile up by id).
func (s *Store) Upload(id string) (File, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.files[id]
	if !ok {
		return File{}, false
	}
	return *f, true
}

// NewConversation creates a conversation owned by ownerID.
func (s *Store) NewConversation(ownerID string, inputs map[string]any, introduction *string, autoName bool) Conversation {
	if inputs == nil {
		inputs = map[string]any{}
	}
	// Sized before the lock, as AddMessage does (encoding the inputs under
	// it queued every chat of a ramp behind each other): the draft has no
	// id, whose length is added below, and today's timestamps, as long as
	// the stored ones.
	now := s.now().Unix()
	conv := dify.Conversation{
		Name: DefaultConversationName, Inputs: inputs, Status: "normal",
		Introduction: introduction, CreatedAt: now, UpdatedAt: now,
	}
	size := conversationSize(conv)
	// Allocated before the lock as well (an allocation may make its
	// goroutine help the collector, under the lock every chat of a ramp
	// waits for): the record, its list entry's unit and the caller's copy
	// of the inputs.
	c := &Conversation{Conversation: conv, OwnerID: ownerID, AutoName: autoName, listing: new(listingCache)}
	u := &unit{conv: c}
	callersInputs := copyMap(inputs)
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.nextKey()
	c.ID, c.CreatedAt, c.UpdatedAt = s.newID(), k.t.Unix(), k.t.Unix()
	c.created, c.updated = k, k
	s.convs[c.ID] = c
	o := s.owner(ownerID)
	o.byCreated = insertSorted(o.byCreated, createdKey, c)
	o.byUpdated = insertSorted(o.byUpdated, updatedKey, c)
	u.bytes = size + int64(len(c.ID))
	c.elem = s.track(u)
	s.evict(c.elem)
	out := *c // c.copy(), with the inputs copied before the lock
	out.messages, out.Inputs = nil, callersInputs
	return out
}

func (c *Conversation) listed() ListedConversation {
	return ListedConversation{ID: c.ID, Name: c.Name, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, JSON: c.listingJSON()}
}

func (c *Conversation) copy() Conversation {
	out := *c
	out.messages = nil
	out.Inputs = copyMap(c.Inputs)
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Conversation returns a live conversation owned by ownerID.
func (s *Store) Conversation(id, ownerID string) (Conversation, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.convs[id]
	if !ok || c.deleted || c.OwnerID != ownerID {
		return Conversation{}, ErrConversationNotFound
	}
	return c.copy(), nil
}

// ClaimTurn picks the recorded turn a follow-up replays: pick receives the
// conversation's cassette and next turn index and returns the cassette and
// turn it chose; the conversation then continues after that turn. Claiming
// under the store's lock keeps concurrent follow-ups on distinct turns.
func (s *Store) ClaimTurn(id, ownerID string, pick func(cassette string, next int) (string, int)) (Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok || c.deleted || c.OwnerID != ownerID {
		return Conversation{}, ErrConversationNotFound
	}
	name, turn := pick(c.Cassette, c.NextTurn)
	c.Cassette, c.NextTurn = name, turn+1
	s.grow(c.elem, 0) // continued: the most recently changed
	return c.copy(), nil
}

// SetReplay records which cassette turn a conversation played last.
func (s *Store) SetReplay(id, cassette string, turn int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[id]; ok {
		c.Cassette, c.NextTurn = cassette, turn+1
	}
}

// ContinueConversation marks the start of a follow-up turn: Dify sets a
// conversation's updated_at when a turn in it begins
// (message_based_app_generator.py _init_generate_records), not when the
// turn ends, and a first turn leaves it at the creation time.
func (s *Store) ContinueConversation(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.convs[id]; ok && !c.deleted {
		s.touch(c, s.nextKey())
	}
}

// AddMessage stores a finished (or ended) turn as given (the chat store
// phase, mockserver/chat_store.go, sets every field); updated_at is not
// changed (ContinueConversation). When the conversation asked for an
// automatic name and this is its first message, the name is generated from
// the query.
func (s *Store) AddMessage(m dify.Message, cassette string) error {
	// Sized before the lock: encoding a turn's message (answer, thoughts,
	// files) was half of a chat's CPU, and under the store's write lock
	// every other chat queued behind it.
	size := messageOverhead + messageSize(m)
	// Allocated before the lock too: an allocation may draft its goroutine
	// into the collector's marking (an assist), and an assist under the
	// write lock held up every other store. When a thousand live streams
	// ended together, the queue behind the lock was most of their lateness.
	sm := &storedMessage{msg: m, cassette: cassette}
	name := GenerateName(m.Query)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[m.ConversationID]
	if !ok || c.deleted {
		return ErrConversationNotFound
	}
	sm.created, sm.ownerID, sm.index = s.nextKey(), c.OwnerID, len(c.messages)
	c.messages = append(c.messages, sm)
	s.messages[m.ID] = sm
	if c.AutoName && len(c.messages) == 1 {
		c.Name = name
	}
	s.grow(c.elem, size)
	s.evict(c.elem)
	return nil
}

// Message returns a message of a live conversation owned by ownerID, with
// the cassette that produced it.
func (s *Store) Message(id, ownerID string) (dify.Message, string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sm, ok := s.messages[id]
	if !ok || sm.ownerID != ownerID {
		return dify.Message{}, "", ErrMessageNotFound
	}
	if c, ok := s.convs[sm.msg.ConversationID]; !ok || c.deleted {
		return dify.Message{}, "", ErrMessageNotFound
	}
	return sm.msg, sm.cassette, nil
}

// Rename sets a conversation's name, or generates it from the first query
// when autoGenerate is set (docs/api §7).
func (s *Store) Rename(id, ownerID, name string, autoGenerate bool) (Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok || c.deleted || c.OwnerID != ownerID {
		return Conversation{}, ErrConversationNotFound
	}
	if autoGenerate {
		if len(c.messages) == 0 {
			return Conversation{}, ErrNoMessages
		}
		name = GenerateName(c.messages[0].msg.Query)
	}
	s.grow(c.elem, int64(len(name)-len(c.Name)))
	c.Name = name
	// ConversationService.rename sets updated_at = naive_utc_now() for a
	// name given; auto_generate_name only sets the name (the column has no
	// onupdate), so a generated name leaves updated_at where it was.
	if !autoGenerate {
		s.touch(c, s.nextKey())
	}
	s.evict(c.elem)
	return c.copy(), nil
}

// Delete soft-deletes a conversation (docs/api §8).
func (s *Store) Delete(id, ownerID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok || c.deleted || c.OwnerID != ownerID {
		return ErrConversationNotFound
	}
	c.deleted = true
	if c.elem != nil {
		s.lru.MoveToFront(c.elem) // deleted conversations are evicted first
	}
	o := s.owner(ownerID)
	o.byCreated = removeSorted(o.byCreated, createdKey, c.created, c)
	o.byUpdated = removeSorted(o.byUpdated, updatedKey, c.updated, c)
	if len(o.byCreated) == 0 && len(o.byUpdated) == 0 {
		delete(s.owners, ownerID)
	}
	return nil
}

// ListConversations pages a user's conversations as Dify does (docs/api §5):
// after the last_id row by strict inequality on the sort field, ordered by
// it, limit rows; has_more when rows remain beyond the page. It costs a
// binary search plus the page in the user's own index, however many
// conversations other users have.
func (s *Store) ListConversations(ownerID, lastID string, limit int, sortBy string) ([]ListedConversation, bool, error) {
	desc := len(sortBy) > 0 && sortBy[0] == '-'
	byUpdated := sortBy == dify.SortUpdatedAt || sortBy == dify.SortUpdatedAtDesc
	k := createdKey
	if byUpdated {
		k = updatedKey
	}
	limit = max(limit, 0)
	s.mu.RLock()
	defer s.mu.RUnlock()
	var rows []*Conversation // ascending by k
	if o := s.owners[ownerID]; o != nil {
		rows = o.byCreated
		if byUpdated {
			rows = o.byUpdated
		}
	}
	// from, to bound the rows after last_id in the listing's direction.
	from, to := 0, len(rows)
	if lastID != "" {
		last, ok := s.convs[lastID]
		if !ok || last.deleted || last.OwnerID != ownerID {
			return nil, false, ErrLastNotFound
		}
		i := search(rows, k, k(last)) // rows[i] is last
		if desc {
			to = i
		} else {
			from = i + 1
		}
	}
	hasMore := to-from > limit
	n := min(to-from, limit)
	out := make([]ListedConversation, n)
	for j := range n {
		var c *Conversation
		if desc {
			c = rows[to-1-j]
		} else {
			c = rows[from+j]
		}
		out[j] = c.listed()
	}
	return out, hasMore, nil
}

// ListMessages pages a conversation's messages (docs/api §6): the newest limit
// messages older than first_id, returned oldest first.
func (s *Store) ListMessages(convID, ownerID, firstID string, limit int) ([]dify.Message, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.convs[convID]
	if !ok || c.deleted || c.OwnerID != ownerID {
		return nil, false, ErrConversationNotFound
	}
	end := len(c.messages) // messages are appended in creation order
	if firstID != "" {
		m, ok := s.messages[firstID]
		if !ok || m.msg.ConversationID != convID || m.index >= len(c.messages) || c.messages[m.index] != m {
			return nil, false, ErrFirstNotFound
		}
		end = m.index
	}
	start := end - limit
	hasMore := start > 0
	if start < 0 {
		start = 0
	}
	out := make([]dify.Message, 0, end-start)
	for _, m := range c.messages[start:end] {
		out = append(out, m.msg)
	}
	return out, hasMore, nil
}

// GenerateName is the mock's stand-in for Dify's LLM-generated conversation
// title: the first query with whitespace collapsed, cut to 47 characters plus
// "..." when longer than 50 (a documented assumption).
func GenerateName(query string) string {
	var b strings.Builder
	b.Grow(min(len(query), 4*50))
	runes, cut := 0, 0 // cut: byte length of the first 47 runes
	space := false
	for _, r := range query {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			space = runes > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			runes++
			if runes == 47 {
				cut = b.Len()
			}
			space = false
		}
		if runes > 50 {
			break // cut to 47 runes below; the rest does not matter
		}
		b.WriteRune(r)
		runes++
		if runes == 47 {
			cut = b.Len()
		}
	}
	if runes == 0 {
		return DefaultConversationName
	}
	if runes > 50 {
		return b.String()[:cut] + "..."
	}
	return b.String()
}
