package store

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/similar"
)

// SnapshotVersion is the Snapshot.Version this package writes and reads.
const SnapshotVersion = 1

// Snapshot is the whole state as JSON: what `dify-mock serve --state-file`
// saves on shutdown and loads at start, and what the control API exports
// and imports. Deleted conversations are not part of it.
type Snapshot struct {
	Version       int           `json:"version"`
	ExportedAt    time.Time     `json:"exported_at"`
	EndUsers      []SnapUser    `json:"end_users"`
	Files         []SnapFile    `json:"files"`
	Conversations []SnapConvers `json:"conversations"`
	// Annotations (oldest first) and the annotation-reply setting, present
	// while reply is enabled (docs/api §27–§28). Reply jobs are not kept.
	Annotations     []SnapAnnotation   `json:"annotations,omitempty"`
	AnnotationReply *AnnotationSetting `json:"annotation_reply,omitempty"`
}

// SnapAnnotation is an annotation.
type SnapAnnotation struct {
	ID        string    `json:"id"`
	Question  string    `json:"question"`
	Answer    string    `json:"answer"`
	HitCount  int       `json:"hit_count"`
	CreatedAt time.Time `json:"created_at"`
}

// SnapUser is an end user.
type SnapUser struct {
	ID        string    `json:"id"`
	Session   string    `json:"user"`
	Anonymous bool      `json:"anonymous,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// SnapFile is an upload's metadata (its owner is an end-user id).
type SnapFile struct {
	Result  FileResult `json:"file"`
	OwnerID string     `json:"owner_id"`
}

// SnapConvers is a conversation with its messages, oldest first, and the
// replay bookkeeping that lets a follow-up continue the same cassette.
type SnapConvers struct {
	dify.Conversation
	OwnerID  string        `json:"owner_id"`
	Cassette string        `json:"cassette,omitempty"`
	NextTurn int           `json:"next_turn,omitempty"`
	AutoName bool          `json:"auto_name,omitempty"`
	Messages []SnapMessage `json:"messages"`
}

// SnapMessage is a stored message, the cassette that produced it and its
// end user's feedback row (docs/api §25), if any.
type SnapMessage struct {
	dify.Message
	Cassette    string        `json:"cassette,omitempty"`
	FeedbackRow *SnapFeedback `json:"feedback_row,omitempty"`
}

// SnapFeedback is a message feedback row.
type SnapFeedback struct {
	ID        string    `json:"id"`
	Rating    string    `json:"rating"`
	Content   *string   `json:"content,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Export copies the whole state.
func (s *Store) Export() Snapshot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap := Snapshot{Version: SnapshotVersion, ExportedAt: s.now().UTC(),
		EndUsers: []SnapUser{}, Files: []SnapFile{}, Conversations: []SnapConvers{}}
	for _, u := range s.users {
		snap.EndUsers = append(snap.EndUsers, SnapUser{ID: u.ID, Session: u.Session, Anonymous: u.Anonymous, CreatedAt: u.CreatedAt.UTC()})
	}
	sort.Slice(snap.EndUsers, func(i, j int) bool {
		a, b := snap.EndUsers[i], snap.EndUsers[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return a.Session < b.Session
	})
	for _, f := range s.files {
		snap.Files = append(snap.Files, SnapFile{Result: f.Result, OwnerID: f.OwnerID})
	}
	sort.Slice(snap.Files, func(i, j int) bool {
		a, b := snap.Files[i].Result, snap.Files[j].Result
		if a.CreatedAt != b.CreatedAt {
			return a.CreatedAt < b.CreatedAt
		}
		return a.ID < b.ID
	})
	var convs []*Conversation
	for _, c := range s.convs {
		if !c.deleted {
			convs = append(convs, c)
		}
	}
	sort.Slice(convs, func(i, j int) bool { return convs[i].created.less(convs[j].created) })
	for _, c := range convs {
		cc := c.copy()
		sc := SnapConvers{Conversation: cc.Conversation, OwnerID: c.OwnerID, Cassette: c.Cassette,
			NextTurn: c.NextTurn, AutoName: c.AutoName, Messages: make([]SnapMessage, 0, len(c.messages))}
		for _, m := range c.messages {
			sm := SnapMessage{Message: m.msg, Cassette: m.cassette}
			if f := m.feedback; f != nil {
				sm.FeedbackRow = &SnapFeedback{ID: f.ID, Rating: f.Rating, Content: f.Content, CreatedAt: f.CreatedAt.UTC(), UpdatedAt: f.UpdatedAt.UTC()}
			}
			sc.Messages = append(sc.Messages, sm)
		}
		snap.Conversations = append(snap.Conversations, sc)
	}
	for _, a := range s.ann.rows {
		snap.Annotations = append(snap.Annotations, SnapAnnotation{ID: a.ID, Question: a.Question, Answer: a.Answer,
			HitCount: a.HitCount, CreatedAt: a.CreatedAt.UTC()})
	}
	if st := s.ann.setting; st != nil {
		cp := *st
		snap.AnnotationReply = &cp
	}
	return snap
}

// Import replaces the whole state with snap after checking it: every id
// is unique, every owner exists, every message belongs to its
// conversation. On error the state is unchanged.
func (s *Store) Import(snap Snapshot) error {
	commit, err := s.PrepareImport(snap)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// PrepareImport is Import's first half: it checks snap and builds the
// state from it without touching the store, and returns what replaces the
// state with it. Several stores (apps) are imported all or none by
// preparing each before committing any.
func (s *Store) PrepareImport(snap Snapshot) (commit func(), err error) {
	if snap.Version != SnapshotVersion {
		return nil, fmt.Errorf("state version %d is not supported (want %d)", snap.Version, SnapshotVersion)
	}
	fresh := New(s.now, s.newID)
	if err := fresh.importUsers(snap.EndUsers); err != nil {
		return nil, err
	}
	if err := fresh.importFiles(snap.Files); err != nil {
		return nil, err
	}
	feedbacks, err := fresh.importConversations(snap.Conversations)
	if err != nil {
		return nil, err
	}
	if err := fresh.importAnnotations(snap.Annotations, snap.AnnotationReply); err != nil {
		return nil, err
	}
	// Feedback rows keep their creation order (the app's feedback list).
	sort.SliceStable(feedbacks, func(a, b int) bool { return feedbacks[a].CreatedAt.Before(feedbacks[b].CreatedAt) })
	fresh.feedbacks = feedbacks
	fresh.account()
	return s.boundImport(fresh)
}

// importUsers is PrepareImport's end users, into the fresh store.
func (fresh *Store) importUsers(users []SnapUser) error {
	for i, u := range users {
		if u.ID == "" || u.Session == "" {
			return fmt.Errorf("end_users[%d]: id and user are required", i)
		}
		if _, dup := fresh.usersID[u.ID]; dup {
			return fmt.Errorf("end_users[%d]: duplicate id %q", i, u.ID)
		}
		if _, dup := fresh.users[u.Session]; dup {
			return fmt.Errorf("end_users[%d]: duplicate user %q", i, u.Session)
		}
		eu := &EndUser{ID: u.ID, Session: u.Session, Anonymous: u.Anonymous || u.Session == DefaultUser, CreatedAt: u.CreatedAt}
		fresh.users[u.Session] = eu
		fresh.usersID[u.ID] = eu
	}
	return nil
}

// importFiles is PrepareImport's files, whose owners are imported already.
func (fresh *Store) importFiles(files []SnapFile) error {
	for i, f := range files {
		if f.Result.ID == "" {
			return fmt.Errorf("files[%d]: file.id is required", i)
		}
		if _, ok := fresh.usersID[f.OwnerID]; !ok {
			return fmt.Errorf("files[%d]: owner_id %q is not an end user of this state", i, f.OwnerID)
		}
		if _, dup := fresh.files[f.Result.ID]; dup {
			return fmt.Errorf("files[%d]: duplicate id %q", i, f.Result.ID)
		}
		fc := f
		fresh.files[f.Result.ID] = &File{Result: fc.Result, OwnerID: fc.OwnerID}
	}
	return nil
}

// importConversations is PrepareImport's conversations and their
// messages; it returns the messages' feedback rows, in conversation order.
// Conversations and messages get keys in the order given (created_at
// first), so listing order survives a round trip.
func (fresh *Store) importConversations(convs []SnapConvers) ([]*Feedback, error) {
	var feedbacks []*Feedback
	order := make([]int, len(convs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return convs[order[a]].CreatedAt < convs[order[b]].CreatedAt
	})
	for _, i := range order {
		var err error
		if feedbacks, err = fresh.importConversation(i, &convs[i], feedbacks); err != nil {
			return nil, err
		}
	}
	// Sorted once per owner: inserting each row in order would cost a
	// shift per row (quadratic for a million conversations of one user).
	for _, o := range fresh.owners {
		sort.Slice(o.byCreated, func(a, b int) bool { return o.byCreated[a].created.less(o.byCreated[b].created) })
		sort.Slice(o.byUpdated, func(a, b int) bool { return o.byUpdated[a].updated.less(o.byUpdated[b].updated) })
	}
	return feedbacks, nil
}

// importConversation imports conversations[i], appending its messages'
// feedback rows to feedbacks.
func (fresh *Store) importConversation(i int, sc *SnapConvers, feedbacks []*Feedback) ([]*Feedback, error) {
	if sc.ID == "" {
		return nil, fmt.Errorf("conversations[%d]: id is required", i)
	}
	if _, ok := fresh.usersID[sc.OwnerID]; !ok {
		return nil, fmt.Errorf("conversations[%d]: owner_id %q is not an end user of this state", i, sc.OwnerID)
	}
	if _, dup := fresh.convs[sc.ID]; dup {
		return nil, fmt.Errorf("conversations[%d]: duplicate id %q", i, sc.ID)
	}
	if sc.NextTurn < 0 {
		return nil, fmt.Errorf("conversations[%d]: next_turn must not be negative", i)
	}
	fresh.seq++
	k := key{t: time.Unix(sc.CreatedAt, 0), seq: fresh.seq}
	c := &Conversation{Conversation: sc.Conversation, OwnerID: sc.OwnerID, Cassette: sc.Cassette,
		NextTurn: sc.NextTurn, AutoName: sc.AutoName, created: k, updated: k, listing: new(listingCache)}
	if c.Inputs == nil {
		c.Inputs = map[string]any{}
	}
	if c.Status == "" {
		c.Status = "normal"
	}
	for j := range sc.Messages {
		st, err := fresh.importMessage(i, j, sc, c)
		if err != nil {
			return nil, err
		}
		if st.feedback != nil {
			feedbacks = append(feedbacks, st.feedback)
		}
	}
	fresh.seq++
	c.updated = key{t: time.Unix(max(sc.UpdatedAt, sc.CreatedAt), 0), seq: fresh.seq}
	fresh.convs[c.ID] = c
	if !c.deleted {
		o := fresh.owner(c.OwnerID)
		o.byCreated = append(o.byCreated, c)
		o.byUpdated = append(o.byUpdated, c)
	}
	return feedbacks, nil
}

// importMessage imports conversations[i].messages[j] into c.
func (fresh *Store) importMessage(i, j int, sc *SnapConvers, c *Conversation) (*storedMessage, error) {
	sm := &sc.Messages[j]
	if sm.ID == "" {
		return nil, fmt.Errorf("conversations[%d].messages[%d]: id is required", i, j)
	}
	if sm.ConversationID != "" && sm.ConversationID != sc.ID {
		return nil, fmt.Errorf("conversations[%d].messages[%d]: conversation_id %q is not its conversation", i, j, sm.ConversationID)
	}
	if _, dup := fresh.messages[sm.ID]; dup {
		return nil, fmt.Errorf("conversations[%d].messages[%d]: duplicate id %q", i, j, sm.ID)
	}
	m := sm.Message
	m.ConversationID = sc.ID
	fresh.seq++
	st := &storedMessage{msg: m, cassette: sm.Cassette, created: key{t: time.Unix(m.CreatedAt, 0), seq: fresh.seq},
		ownerID: sc.OwnerID, index: len(c.messages)}
	if fr := sm.FeedbackRow; fr != nil {
		if fr.ID == "" || fr.Rating == "" {
			return nil, fmt.Errorf("conversations[%d].messages[%d].feedback_row: id and rating are required", i, j)
		}
		st.feedback = &Feedback{ID: fr.ID, MessageID: m.ID, ConversationID: sc.ID, Rating: fr.Rating, Content: fr.Content,
			FromEndUserID: sc.OwnerID, CreatedAt: fr.CreatedAt, UpdatedAt: fr.UpdatedAt}
		st.msg.Feedback = &dify.Feedback{Rating: fr.Rating}
	} else {
		st.msg.Feedback = nil
	}
	c.messages = append(c.messages, st)
	fresh.messages[m.ID] = st
	return st, nil
}

// importAnnotations is PrepareImport's annotations and annotation-reply
// setting.
func (fresh *Store) importAnnotations(anns []SnapAnnotation, reply *AnnotationSetting) error {
	seen := map[string]bool{}
	for i, a := range anns {
		if a.ID == "" {
			return fmt.Errorf("annotations[%d]: id is required", i)
		}
		if seen[a.ID] {
			return fmt.Errorf("annotations[%d]: duplicate id %q", i, a.ID)
		}
		if a.HitCount < 0 {
			return fmt.Errorf("annotations[%d]: hit_count must not be negative", i)
		}
		seen[a.ID] = true
		fresh.ann.rows = append(fresh.ann.rows, &Annotation{ID: a.ID, Question: a.Question, Answer: a.Answer,
			HitCount: a.HitCount, CreatedAt: a.CreatedAt, vec: similar.Parse(a.Question)})
	}
	// Listing is newest first by position; keep the given order for ties.
	sort.SliceStable(fresh.ann.rows, func(a, b int) bool { return fresh.ann.rows[a].CreatedAt.Before(fresh.ann.rows[b].CreatedAt) })
	fresh.ann.changed()
	if reply != nil {
		cp := *reply
		fresh.ann.setting = &cp
	}
	return nil
}

// boundImport is PrepareImport's last step: fresh, built and accounted,
// evicted down to s's bound before the lock is taken (an import larger
// than the bound never stalls other requests while it shrinks), and the
// commit that puts it in s's place.
func (s *Store) boundImport(fresh *Store) (commit func(), err error) {
	_, maxBytes := s.Usage()
	if maxBytes > 0 && fresh.ann.bytes > maxBytes {
		return nil, fmt.Errorf("annotations: %d bytes (estimated) would pass the state bound of %d bytes", fresh.ann.bytes, maxBytes)
	}
	var evicted Eviction
	fresh.maxBytes, fresh.onEvict = maxBytes, func(ev Eviction) { evicted = ev }
	fresh.evict(nil)
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.replace(fresh)
		s.seq = max(s.seq, fresh.seq)
		if evicted.Count() > 0 && s.onEvict != nil {
			s.onEvict(evicted)
		}
	}, nil
}

// Reset empties the store.
func (s *Store) Reset() {
	empty := New(s.now, s.newID)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replace(empty)
}

// replace takes over every piece of state of other (s.mu held). A field
// added to Store must be handled here, in Export, Import and ResetUser;
// TestSnapshotCoversEveryStoreField fails until it is.
func (s *Store) replace(other *Store) {
	s.users, s.usersID, s.files, s.convs, s.messages, s.owners = other.users, other.usersID, other.files, other.convs, other.messages, other.owners
	s.feedbacks = other.feedbacks
	s.ann = other.ann
	// The memory accounting follows the state; the bound (maxBytes,
	// onEvict) is configuration and stays.
	s.charge(other.bytes - s.bytes)
	s.lru = other.lru
	s.evict(nil)
}

// ErrUserNotFound is returned by ResetUser for an unknown end user.
var ErrUserNotFound = errors.New("end user not found")

// ResetUser forgets one end user (by the `user` string clients send) with
// their conversations, messages and uploads.
func (s *Store) ResetUser(session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[session]
	if !ok {
		return ErrUserNotFound
	}
	for id, c := range s.convs {
		if c.OwnerID != u.ID {
			continue
		}
		for _, m := range c.messages {
			delete(s.messages, m.msg.ID)
		}
		s.untrack(c.elem)
		delete(s.convs, id)
	}
	for id, f := range s.files {
		if f.OwnerID == u.ID {
			s.untrack(f.elem)
			delete(s.files, id)
		}
	}
	kept := s.feedbacks[:0]
	for _, f := range s.feedbacks {
		if f.FromEndUserID != u.ID {
			kept = append(kept, f)
		}
	}
	clear(s.feedbacks[len(kept):])
	s.feedbacks = kept
	delete(s.owners, u.ID)
	s.untrack(u.elem)
	delete(s.users, session)
	delete(s.usersID, u.ID)
	return nil
}

// UserSummary is one end user in the state browser.
type UserSummary struct {
	ID            string    `json:"id"`
	User          string    `json:"user"`
	Anonymous     bool      `json:"anonymous,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	Conversations int       `json:"conversations"`
	Messages      int       `json:"messages"`
	Files         int       `json:"files"`
}

// Summary lists the end users with their counts, oldest first.
func (s *Store) Summary() []UserSummary {
	s.mu.RLock()
	defer s.mu.RUnlock()
	byID := map[string]*UserSummary{}
	out := make([]*UserSummary, 0, len(s.users))
	for _, u := range s.users {
		us := &UserSummary{ID: u.ID, User: u.Session, Anonymous: u.Anonymous, CreatedAt: u.CreatedAt.UTC()}
		byID[u.ID] = us
		out = append(out, us)
	}
	for _, c := range s.convs {
		if us := byID[c.OwnerID]; us != nil && !c.deleted {
			us.Conversations++
			us.Messages += len(c.messages)
		}
	}
	for _, f := range s.files {
		if us := byID[f.OwnerID]; us != nil {
			us.Files++
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].User < out[j].User
	})
	res := make([]UserSummary, len(out))
	for i, us := range out {
		res[i] = *us
	}
	return res
}
