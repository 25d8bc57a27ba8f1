// Package rules holds dify-mock's response rules: steering set through the
// control API (or the web console) instead of request headers, so a
// frontend's own code stays unmodified. A rule picks the cassette, the
// replay speed and/or a fault for the next N matching requests (or until it
// is removed), scoped to an end user, a conversation, a route or
// everything.
//
// Precedence (docs/mock/console.md): a request's own X-Dify-Mock-* headers
// win per setting; then the newest matching rule; then the cassette's
// dify_mock.fault and the normal cassette selection; then the server's
// --fault and --speed.
package rules

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/difyops/terraform-provider-dify/mockserver/journal"
)

// MaxRules bounds how many rules may exist at once.
const MaxRules = 1000

// Rule is one rule. Zero scope fields match everything.
type Rule struct {
	ID string `json:"id"`
	// Scope. App is the name of the app whose requests it applies to
	// ("" = every app's; docs/mock/apps.md).
	App          string `json:"app,omitempty"`
	User         string `json:"user,omitempty"`
	Conversation string `json:"conversation_id,omitempty"`
	// Route is "[METHOD ]PATH" with ":name" or "*" segments matching any
	// segment, e.g. "/v1/chat-messages" or "GET /v1/conversations/:id".
	Route string `json:"route,omitempty"`
	// What it sets; at least one.
	Cassette string   `json:"cassette,omitempty"`
	Speed    *float64 `json:"speed,omitempty"`
	Fault    string   `json:"fault,omitempty"`
	// Times is how many requests it applies to; 0 = until removed.
	Times int `json:"times,omitempty"`
	// Used counts the requests it applied to; Remaining is Times-Used
	// (absent for a rule without a limit).
	Used      int       `json:"used"`
	Remaining *int      `json:"remaining,omitempty"`
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Request is what a rule is matched against.
type Request struct {
	App, Method, Path, User, Conversation string
}

// Set is the live rule list. The zero value is not usable; use New.
type Set struct {
	mu    sync.Mutex
	rules []*Rule // newest first
	seq   int
	n     atomic.Int32 // len(rules), read without the lock
	now   func() time.Time
	// changed is called (outside the lock) after every change.
	changed func()
}

// New returns an empty set; changed (optional) is told about every change.
func New(changed func()) *Set {
	return &Set{now: time.Now, changed: changed}
}

// Validation errors.
var (
	ErrNothingSet = errors.New("a rule must set at least one of cassette, speed or fault")
	ErrTooMany    = fmt.Errorf("too many rules (at most %d); delete some first", MaxRules)
)

// Speed limits, as for X-Dify-Mock-Speed.
const (
	MinSpeed = 0.001
	MaxSpeed = 1e6
)

// Check validates r's own fields (the caller checks that its cassette is
// loaded and its fault parses).
func Check(r *Rule) error {
	if r.Cassette == "" && r.Speed == nil && r.Fault == "" {
		return ErrNothingSet
	}
	if r.Times < 0 {
		return fmt.Errorf("times %d: want 0 (until removed) or a positive count", r.Times)
	}
	if r.Speed != nil {
		f := *r.Speed
		if math.IsNaN(f) || (f != 0 && (f < MinSpeed || f > MaxSpeed)) {
			return fmt.Errorf("speed %v: want 0 (no delays) or a number from %v to %v", f, MinSpeed, MaxSpeed)
		}
	}
	if r.Route != "" && !journal.ValidRoute(r.Route) {
		return fmt.Errorf("route %q: want a path such as /v1/chat-messages, optionally after a method (\"POST /v1/chat-messages\")", r.Route)
	}
	if len(r.Note) > 500 || len(r.User) > 500 || len(r.Conversation) > 100 || len(r.Route) > 500 || len(r.App) > 63 {
		return errors.New("app, user, conversation_id, route or note is too long")
	}
	return nil
}

// Add validates r and puts it first (the newest rule wins, as msw's
// server.use does). ID, Used and CreatedAt are set by the set.
func (s *Set) Add(r Rule) (Rule, error) {
	r.Conversation = strings.ToLower(strings.TrimSpace(r.Conversation))
	r.Route = strings.TrimSpace(r.Route)
	if err := Check(&r); err != nil {
		return Rule{}, err
	}
	s.mu.Lock()
	if len(s.rules) >= MaxRules {
		s.mu.Unlock()
		return Rule{}, ErrTooMany
	}
	s.seq++
	r.ID = "rule-" + strconv.Itoa(s.seq)
	r.Used = 0
	r.CreatedAt = s.now().UTC()
	stored := r
	s.rules = append([]*Rule{&stored}, s.rules...)
	s.n.Store(int32(len(s.rules)))
	out := stored.view()
	s.mu.Unlock()
	s.notify()
	return out, nil
}

func (s *Set) notify() {
	if s.changed != nil {
		s.changed()
	}
}

func (r *Rule) view() Rule {
	out := *r
	if r.Speed != nil {
		v := *r.Speed
		out.Speed = &v
	}
	if r.Times > 0 {
		n := r.Times - r.Used
		out.Remaining = &n
	}
	return out
}

// List returns the rules, newest (first to match) first.
func (s *Set) List() []Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Rule, 0, len(s.rules))
	for _, r := range s.rules {
		out = append(out, r.view())
	}
	return out
}

// Delete removes a rule; false when there is none with that id.
func (s *Set) Delete(id string) bool {
	s.mu.Lock()
	found := false
	for i, r := range s.rules {
		if r.ID == id {
			s.rules = append(s.rules[:i], s.rules[i+1:]...)
			s.n.Store(int32(len(s.rules)))
			found = true
			break
		}
	}
	s.mu.Unlock()
	if found {
		s.notify()
	}
	return found
}

// Clear removes every rule and reports how many there were.
func (s *Set) Clear() int {
	s.mu.Lock()
	n := len(s.rules)
	s.rules = nil
	s.n.Store(0)
	s.mu.Unlock()
	if n > 0 {
		s.notify()
	}
	return n
}

// Matches reports whether r's scope covers req.
func (r *Rule) Matches(req Request) bool {
	if r.App != "" && r.App != req.App {
		return false
	}
	if r.User != "" && r.User != req.User {
		return false
	}
	if r.Conversation != "" && !strings.EqualFold(r.Conversation, req.Conversation) {
		return false
	}
	if r.Route != "" && !journal.MatchRoute(r.Route, req.Method, req.Path) {
		return false
	}
	return true
}

// Take returns the newest rule that matches req and that want accepts (nil
// accepts every rule), and counts the use; a rule whose count is spent is
// removed. ok is false when none matches.
func (s *Set) Take(req Request, want func(*Rule) bool) (Rule, bool) {
	if s.n.Load() == 0 {
		return Rule{}, false // the common case costs no lock
	}
	s.mu.Lock()
	var hit *Rule
	for i, r := range s.rules {
		if !r.Matches(req) || (want != nil && !want(r)) {
			continue
		}
		r.Used++
		hit = r
		if r.Times > 0 && r.Used >= r.Times {
			s.rules = append(s.rules[:i], s.rules[i+1:]...)
			s.n.Store(int32(len(s.rules)))
		}
		break
	}
	var out Rule
	if hit != nil {
		out = hit.view()
	}
	s.mu.Unlock()
	if hit == nil {
		return Rule{}, false
	}
	s.notify()
	return out, true
}

// Len is the number of rules (read without the lock: every request asks).
func (s *Set) Len() int { return int(s.n.Load()) }
