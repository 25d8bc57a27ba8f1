package mockserver

import (
	"bytes"
	"sync"

	"github.com/difyops/terraform-provider-dify/dify"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/replay"
)

// liveIDs rewrites the frames of a turn the upstream answers live (serve
// --upstream, docs/mock/hybrid.md) so the client sees the mock's ids: the
// upstream's conversation, message and task ids, learnt from the frames
// as they arrive, become the mock's. Other ids (agent thoughts, files) and
// created_at values pass unchanged and are stored as they were streamed.
type liveIDs struct {
	conv, msg, task string // the mock's
	from, to        [][]byte
	seen            map[string]bool
}

func newLiveIDs(conv, msg, task string) *liveIDs {
	return &liveIDs{conv: conv, msg: msg, task: task, seen: map[string]bool{}}
}

// read rewrites raw in place, every known upstream id replaced with the
// mock's (a UUID for a UUID: the length stays), and decodes it once
// (replay.ReadLive) for its event and the live compile. A frame that
// brings a new upstream id (the first one, as a rule) is rewritten and
// decoded again. In place, so that the recorder, which keeps the same
// bytes, holds no second copy of the answer.
func (l *liveIDs) read(raw []byte) replay.LiveFrame {
	l.replace(raw)
	f := replay.ReadLive(raw)
	if l.learn(f.Envelope()) {
		l.replace(raw)
		f = replay.ReadLive(raw)
	}
	return f
}

// replace replaces every known upstream id in raw with the mock's.
func (l *liveIDs) replace(raw []byte) {
	for i, f := range l.from {
		for rest := raw; ; {
			k := bytes.Index(rest, f)
			if k < 0 {
				break
			}
			copy(rest[k:], l.to[i])
			rest = rest[k+len(f):]
		}
	}
}

// learn takes the upstream ids a frame carries; it reports whether one was
// new.
func (l *liveIDs) learn(conv, msg, task string) (learnt bool) {
	for _, p := range [][2]string{{conv, l.conv}, {msg, l.msg}, {task, l.task}} {
		// Dify's ids are UUIDs; anything shorter could occur in an answer's
		// text by accident, and a UUID replaced by a UUID keeps every
		// frame's length.
		if !dify.IsUUID(p[0]) || len(p[0]) != len(p[1]) || l.seen[p[0]] || p[0] == p[1] {
			continue
		}
		l.seen[p[0]] = true
		l.from = append(l.from, []byte(p[0]))
		l.to = append(l.to, []byte(p[1]))
		learnt = true
	}
	return learnt
}

// upstreamConversations maps the mock's conversations to the upstream
// conversations that answered them, so a follow-up continues upstream
// where the first turn went. It is bounded: past maxMapped the oldest
// mapping is forgotten (that conversation's follow-ups then start a new
// upstream conversation).
type upstreamConversations struct {
	mu    sync.Mutex
	byID  map[string]string
	order []string
}

const maxMapped = 10000

func (u *upstreamConversations) get(mock string) (string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	up, ok := u.byID[mock]
	return up, ok
}

func (u *upstreamConversations) set(mock, up string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.byID == nil {
		u.byID = map[string]string{}
	}
	if _, ok := u.byID[mock]; !ok {
		u.order = append(u.order, mock)
	}
	u.byID[mock] = up
	for len(u.order) > maxMapped {
		delete(u.byID, u.order[0])
		u.order = u.order[1:]
	}
}
