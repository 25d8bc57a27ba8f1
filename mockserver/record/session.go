package record

import (
	"container/list"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// session is one chat cassette being recorded: a conversation's turns and
// the other requests that belong to it.
type session struct {
	mu           sync.Mutex
	name         string // chosen cassette name (file name without .yaml)
	startedAt    time.Time
	firstQuery   string // scrubbed
	turns        int
	offered      int // turns Forward was given (saved or not)
	interactions []*vcr.Interaction
	path         string      // file written, "" before the first write
	written      os.FileInfo // what we left on disk, to detect edits
	failed       error       // a refused save; the session is not written again

	// Under Recorder.mu (bound.go):
	elem    *list.Element // its place in Recorder.open
	entries []indexEntry  // the index entries that point at it
	closed  bool          // no longer open: nothing new joins it
	hasFile bool          // a save wrote its cassette
}

// nameOf reads a session's current name (it changes, under both locks, when
// a clash is found at write time).
func (r *Recorder) nameOf(s *session) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return s.name
}

// maxNameTries bounds the name-2, name-3… search.
const maxNameTries = 1000

// checkRequestedName validates an X-Dify-Mock-Cassette value.
func checkRequestedName(name string) error {
	name = strings.TrimSuffix(name, ".yaml")
	// The name becomes a file name and is repeated in logs and headers (and the
	// name check below would quote it):
	// a key pasted into the header must not end up there.
	if len(secrets.Scan([]byte(name))) > 0 || secrets.IsCredentialName(name) {
		return fmt.Errorf("%s: the name looks like a secret (an API key or token); choose a descriptive name", cassette.NameHeader)
	}
	if err := cassette.ValidName(name); err != nil {
		return fmt.Errorf("%s: %v", cassette.NameHeader, err)
	}
	if name == cassette.AppName {
		return fmt.Errorf("%s: %q is reserved for the app description", cassette.NameHeader, name)
	}
	return nil
}

// slug turns a query into a cassette name: lower-case ASCII letters and
// digits, other runs become '-', at most 40 characters cut at a word
// boundary. Queries without such characters give "chat".
func slug(q string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(q) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 40 {
		s = s[:40]
		if i := strings.LastIndexByte(s, '-'); i >= 20 {
			s = s[:i]
		}
		s = strings.Trim(s, "-")
	}
	if s == "" || s == cassette.AppName {
		return "chat"
	}
	return s
}

func candidateName(base string, n int) string {
	if n == 1 {
		return base
	}
	return base + "-" + strconv.Itoa(n)
}

// nameProbe is a look at the folder for a new session's name, taken
// before r.mu: a file-system call under the recorder's lock held up every
// other stream while the calling thread waited to be scheduled again, and
// 1,000 live chats starting together queued behind it. Only base is looked
// at; base-2, base-3… are looked at under the lock, when base is taken.
// The folder may change after the look: the save refuses to overwrite a
// file and moves on to the next name (save), so the look is a hint.
type nameProbe struct {
	base   string
	onDisk bool
}

// probeName looks at the folder for base (a ".yaml" suffix is dropped).
func (r *Recorder) probeName(base string) nameProbe {
	base = strings.TrimSuffix(base, ".yaml")
	return nameProbe{base: base, onDisk: r.onDisk(base)}
}

// onDiskAt is onDisk for the n-th candidate name: the first was looked at
// before the lock (p), the others are looked at now.
func (r *Recorder) onDiskAt(p nameProbe, n int, name string) bool {
	if n == 1 {
		return p.onDisk
	}
	return r.onDisk(name)
}

// onDisk reports whether the folder holds name's cassette file.
func (r *Recorder) onDisk(name string) bool {
	_, err := os.Lstat(filepath.Join(r.dir, name+".yaml"))
	return !errors.Is(err, fs.ErrNotExist)
}

// newSessionLocked creates a session named p.base, or base-2, base-3…
// when base is taken by a session of this run or a file in the folder.
// requested is the X-Dify-Mock-Cassette value, if any.
func (r *Recorder) newSessionLocked(p nameProbe, requested, user string) *session {
	base := p.base
	s := &session{startedAt: time.Now()}
	for n := 1; ; n++ {
		name := candidateName(base, n)
		if n > maxNameTries || (r.reserved[name] == nil && !r.onDiskAt(p, n, name)) {
			// Past the bound, WriteNew still refuses to overwrite; the
			// save will report the clash.
			s.name = name
			break
		}
	}
	if s.name != base {
		r.logf("cassette %s.yaml exists; recording into %s.yaml", base, s.name)
	}
	r.openLocked(s)
	r.indexLocked(r.reserved, s.name, s)
	if requested != "" {
		r.indexLocked(r.byRequested, strings.TrimSuffix(requested, ".yaml"), s)
	}
	r.indexLocked(r.lastByUser, user, s)
	return s
}

// save applies change to s and writes the session's cassette when it holds
// at least one chat turn; it reports whether it wrote. A refused save marks
// the session failed: it is not written again (its file, if any, keeps the
// last good version).
func (r *Recorder) save(s *session, change func(*session)) bool {
	_, ok := r.saveGated(s, change, nil)
	return ok
}

// saveGated is save with one more gate after the secret check: gate
// (when not nil) sees the exact bytes about to be written and may refuse
// them, as the secret check does. It returns the cassette written, as the
// check decoded it.
func (r *Recorder) saveGated(s *session, change func(*session), gate func(name string, data []byte) error) (*cassette.Cassette, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		r.logf("cassette %s: not saved (an earlier save was refused)", s.name)
		return nil, false
	}
	change(s)
	if s.turns == 0 {
		return nil, false
	}
	f := &cassette.File{Meta: r.chatMeta(s), Interactions: s.interactions}
	data, err := cassette.Encode(f)
	var saved *cassette.Cassette
	if err == nil {
		saved, err = r.checkChat(s.name, data, cassette.KindChat)
	}
	if err == nil && gate != nil {
		err = gate(s.name, data)
	}
	if err != nil {
		r.refuse(s, err)
		return nil, false
	}
	if err := r.writeSession(s, data); err != nil {
		r.refuse(s, fmt.Errorf("cassette %s: %w", s.name, err))
		return nil, false
	}
	r.logf("saved %s (%d turn(s), %d interaction(s))", s.path, s.turns, len(s.interactions))
	saved.Name, saved.Path = s.name, s.path
	return saved, true
}

// refuse marks s failed (s.mu held) and reports err.
func (r *Recorder) refuse(s *session, err error) {
	s.failed = err
	r.mu.Lock()
	if len(r.refused) < maxRefusalsKept {
		r.refused = append(r.refused, err)
	} else {
		r.moreRefused++
	}
	r.mu.Unlock()
	r.logf("%v", err)
}

func (r *Recorder) chatMeta(s *session) cassette.Meta {
	q := s.firstQuery
	if utf8.RuneCountInString(q) > 80 {
		q = string([]rune(q)[:80]) + "…"
	}
	return cassette.Meta{
		Format:      cassette.FormatVersion,
		Kind:        cassette.KindChat,
		Description: fmt.Sprintf("Recorded chat session, %d turn(s); first query: %q", s.turns, q),
		Provenance:  cassette.ProvenanceRecorded,
		Source:      "recorded by dify-mock record from " + r.host,
		RecordedAt:  s.startedAt.UTC().Format(time.RFC3339),
		Mode:        r.mode,
	}
}

// writeSession writes data as the session's cassette. The first write
// claims a new file with cassette.WriteNew (never replacing anything);
// later writes atomically replace that same file, but only if it is still
// the file this recorder wrote. Either way readers never see half a file.
func (r *Recorder) writeSession(s *session, data []byte) error {
	if s.path != "" {
		st, err := os.Stat(s.path)
		if err == nil && os.SameFile(st, s.written) && st.ModTime().Equal(s.written.ModTime()) && st.Size() == s.written.Size() {
			return r.replaceOwn(s, data)
		}
		r.logf("%s changed on disk since it was written; continuing in a new file", s.path)
		s.path = ""
	}
	base := s.name
	for n := 1; n <= maxNameTries; n++ {
		name := candidateName(base, n)
		r.mu.Lock()
		if owner := r.reserved[name]; owner != nil && owner != s {
			r.mu.Unlock()
			continue
		}
		r.mu.Unlock()
		path, err := cassette.WriteNew(r.dir, name, data)
		if errors.Is(err, cassette.ErrExists) {
			continue
		}
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		r.mu.Lock()
		if name != s.name {
			r.logf("cassette %s.yaml appeared meanwhile; recording into %s.yaml", s.name, name)
			if r.reserved[s.name] == s {
				delete(r.reserved, s.name)
			}
			r.indexLocked(r.reserved, name, s)
			s.name = name
		}
		s.hasFile = true
		r.written[path] = true
		r.mu.Unlock()
		s.path, s.written = path, st
		return nil
	}
	return fmt.Errorf("no free name from %s.yaml to %s.yaml", base, candidateName(base, maxNameTries))
}

func (r *Recorder) replaceOwn(s *session, data []byte) error {
	path, err := cassette.WriteReplace(r.dir, s.name, data)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	s.path, s.written = path, st
	return nil
}

// claimPendingLocked moves the user's waiting interactions to s.
func (r *Recorder) claimPendingLocked(user string) []*vcr.Interaction {
	waiting := r.pending[user]
	delete(r.pending, user)
	r.pendingCount -= len(waiting)
	return waiting
}
