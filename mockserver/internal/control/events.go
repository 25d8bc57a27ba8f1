package control

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
)

// events streams live updates as server-sent events: every journal event
// (request, update, frame, done, cleared, lagged) plus rules, state and
// cassettes changes. Each SSE event's name is the type; its data is JSON.
// A comment line every Heartbeat keeps proxies from closing the stream.
func (h *Handler) events(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	rc := http.NewResponseController(w)
	ch, cancel := h.opt.Journal.Subscribe()
	defer cancel()
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("retry: 1000\n\nevent: hello\ndata: {}\n\n"))
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(h.opt.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.opt.Done:
			return
		case <-tick.C:
			if _, err := w.Write([]byte(": keep-alive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		case ev, ok := <-ch:
			if !ok {
				return
			}
			data, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			buf := make([]byte, 0, len(data)+len(ev.Type)+16)
			buf = append(buf, "event: "...)
			buf = append(buf, ev.Type...)
			buf = append(buf, "\ndata: "...)
			buf = append(buf, data...)
			buf = append(buf, '\n', '\n')
			// Send what is queued together, then flush once.
			for more := true; more; {
				select {
				case ev2, ok := <-ch:
					if !ok {
						more = false
						break
					}
					if d2, err := json.Marshal(ev2); err == nil {
						buf = append(buf, "event: "...)
						buf = append(buf, ev2.Type...)
						buf = append(buf, "\ndata: "...)
						buf = append(buf, d2...)
						buf = append(buf, '\n', '\n')
					}
					more = len(buf) < 256<<10
				default:
					more = false
				}
			}
			if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
