package journal

import (
	"sync"
	"sync/atomic"
)

// Event types sent to subscribers.
const (
	EventRequest = "request" // a request arrived (Data: Entry summary)
	EventUpdate  = "update"  // the mock chose a cassette/turn/fault (Data: Entry summary)
	EventFrame   = "frame"   // a stream frame was written (Data: Frame, without bytes)
	EventDone    = "done"    // the response ended (Data: Entry summary)
	EventCleared = "cleared" // the journal was cleared
	// EventLagged replaces the events a slow subscriber missed: it should
	// fetch the journal again.
	EventLagged = "lagged"
)

// Event is one live update.
type Event struct {
	Type string `json:"type"`
	ID   int64  `json:"id,omitempty"`
	Data any    `json:"data,omitempty"`
}

// subscriberBuffer is how many events a subscriber may fall behind before
// it gets EventLagged instead.
const subscriberBuffer = 1024

type subscriber struct {
	ch     chan Event
	lagged atomic.Bool
}

// hub fans events out to subscribers without ever blocking a request: a
// subscriber whose buffer is full misses events and is told so.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
	n    atomic.Int32
}

func (h *hub) active() bool { return h.n.Load() > 0 }

// publish sends ev; data computes ev.Data only when someone listens.
func (h *hub) publish(ev Event, data func() any) {
	if !h.active() {
		return
	}
	if data != nil {
		ev.Data = data()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.lagged.Load() {
			select {
			case s.ch <- Event{Type: EventLagged}:
				s.lagged.Store(false)
			default:
				continue
			}
		}
		select {
		case s.ch <- ev:
		default:
			s.lagged.Store(true)
		}
	}
}

// Subscribe returns a channel of live events and a function that ends the
// subscription (and closes the channel).
func (j *Journal) Subscribe() (<-chan Event, func()) {
	s := &subscriber{ch: make(chan Event, subscriberBuffer)}
	h := &j.hub
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[*subscriber]struct{}{}
	}
	h.subs[s] = struct{}{}
	h.n.Add(1)
	h.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.n.Add(-1)
			close(s.ch)
			h.mu.Unlock()
		})
	}
}

// Publish sends an event that is not about one entry (rules or state
// changed) to the subscribers.
func (j *Journal) Publish(typ string, data any) {
	j.hub.publish(Event{Type: typ}, func() any { return data })
}
