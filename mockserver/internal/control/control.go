// Package control is dify-mock's control API and web console, served under
// /__mock/ next to the impersonated Dify API: the request journal, rules
// that steer the next responses, the state (list, reset, export, import),
// the loaded cassettes (list, reload, save a journaled stream as a new
// cassette) and live updates over server-sent events. docs/mock/console.md
// documents every route.
//
// The API answers only loopback Host/Origin values unless more are
// configured (DNS rebinding), never sends CORS headers, accepts state
// changes only as JSON, and requires the admin token when one is set.
package control

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/console"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/store"
	"github.com/difyops/terraform-provider-dify/mockserver/journal"
	"github.com/difyops/terraform-provider-dify/mockserver/rules"
)

// Prefix is where the control API and the console live.
const Prefix = "/__mock/"

// maxBody bounds control API request bodies; a state import may be large.
const maxBody = 64 << 20

// Live-update event types besides the journal's own.
const (
	EventRules     = "rules"
	EventState     = "state"
	EventCassettes = "cassettes"
)

// Backend is what the control API needs from the mock server.
type Backend interface {
	// Info describes the running server for the console's header.
	Info() map[string]any
	// CheckRule validates a rule's cassette name and fault spec.
	CheckRule(r *rules.Rule) error
	// Cassettes lists the loaded chat cassettes; Cassette returns one's
	// turns and frames for the console's player.
	Cassettes() []CassetteInfo
	Cassette(name string) (*CassetteDetail, bool)
	// ReloadCassettes loads the cassette folder again.
	ReloadCassettes() ReloadResult
	// SaveCassette writes a journaled chat stream as a new cassette.
	SaveCassette(e journal.Entry, name, description string) (SavedCassette, error)
}

// CassetteInfo is one loaded cassette.
type CassetteInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Provenance  string   `json:"provenance"`
	Turns       int      `json:"turns"`
	Default     bool     `json:"default,omitempty"`
	Fault       string   `json:"fault,omitempty"`
	Queries     []string `json:"queries"`
}

// CassetteDetail is a cassette with its frames, for the in-page player.
type CassetteDetail struct {
	CassetteInfo
	TurnList []CassetteTurn `json:"turn_list"`
}

// CassetteTurn is one recorded turn.
type CassetteTurn struct {
	Query  string          `json:"query"`
	Status int             `json:"status"`
	Frames []CassetteFrame `json:"frames"`
}

// CassetteFrame is one recorded frame: its offset and its data line.
type CassetteFrame struct {
	OffsetMS float64 `json:"offset_ms"`
	Event    string  `json:"event"`
	Data     string  `json:"data"`
}

// ReloadResult says what a reload did.
type ReloadResult struct {
	OK        bool      `json:"ok"`
	Source    string    `json:"source"`
	Cassettes []string  `json:"cassettes,omitempty"`
	Error     string    `json:"error,omitempty"`
	At        time.Time `json:"at"`
}

// SavedCassette is where SaveCassette wrote.
type SavedCassette struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Errors a Backend returns that map to a 4xx.
var (
	ErrInvalid  = errors.New("invalid")
	ErrConflict = errors.New("conflict")
	ErrNotFound = errors.New("not found")
)

// Options configure the handler.
type Options struct {
	Journal *journal.Journal
	// NoJournal says the server records no requests (serve
	// --journal=false): the journal's routes answer 409 journal_off rather
	// than an empty list a test would wait on in vain.
	NoJournal bool
	Rules     *rules.Set
	Store     *store.Store
	Backend   Backend
	// App resolves the ?app=NAME of a per-app route (state, cassettes;
	// "" = the default app) and a rule's app; nil: one app, Store and
	// Backend. Its error names the known apps.
	App func(name string) (AppTarget, error)
	// Apps describes every app for GET /__mock/api (nil: one app).
	Apps func() []AppInfo
	// ExportAll and ImportAll are the state of every app, as a state
	// file holds it (?app=* on /state/export and /state/import); nil: the
	// routes know one app's state only.
	ExportAll func() ([]byte, error)
	ImportAll func([]byte) error
	// AdminToken, when set, is required on every request.
	AdminToken string
	// AllowedHosts are host names accepted besides loopback ones.
	AllowedHosts []string
	// Done ends live-update streams (server shutdown).
	Done <-chan struct{}
	// Heartbeat is the live-update keep-alive interval (default 15s).
	Heartbeat time.Duration
}

// AllApps is the ?app= value that names every app (/state/export and
// /state/import).
const AllApps = "*"

// AppTarget is one app's part of the control API.
type AppTarget struct {
	Name    string
	Store   *store.Store
	Backend Backend
}

// AppInfo describes one app in GET /__mock/api.
type AppInfo struct {
	Name        string `json:"name"`
	Mode        string `json:"mode"`
	AppName     string `json:"app_name"`
	Default     bool   `json:"default"`
	Keys        int    `json:"keys"`
	CassetteDir string `json:"cassette_dir"`
	Cassettes   int    `json:"cassettes"`
}

// Handler serves Prefix.
type Handler struct {
	opt    Options
	router *httprouter.Router
	h      http.Handler
}

// New builds the handler.
func New(opt Options) *Handler {
	if opt.Heartbeat <= 0 {
		opt.Heartbeat = 15 * time.Second
	}
	h := &Handler{opt: opt}
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.HandleOPTIONS = false
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, http.StatusNotFound, "not_found", "No such control route; see docs/mock/console.md.")
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeErr(w, http.StatusMethodNotAllowed, "method_not_allowed", "The method is not allowed for this control route.")
	})
	r.GET("/__mock/", h.consolePage)
	r.GET("/__mock/static/*file", h.consoleAsset)
	r.GET("/__mock/api", h.info)
	r.GET("/__mock/api/journal", h.needsJournal(h.listJournal))
	r.DELETE("/__mock/api/journal", h.needsJournal(h.clearJournal))
	r.GET("/__mock/api/journal/:id", h.needsJournal(h.getJournal))
	r.GET("/__mock/api/rules", h.listRules)
	r.POST("/__mock/api/rules", h.addRule)
	r.DELETE("/__mock/api/rules", h.clearRules)
	r.DELETE("/__mock/api/rules/:id", h.deleteRule)
	r.GET("/__mock/api/state", h.stateSummary)
	r.GET("/__mock/api/state/users/:user", h.stateUser)
	r.GET("/__mock/api/state/export", h.exportState)
	r.POST("/__mock/api/state/import", h.importState)
	r.POST("/__mock/api/state/reset", h.resetState)
	r.GET("/__mock/api/cassettes", h.listCassettes)
	r.POST("/__mock/api/cassettes", h.needsJournal(h.saveCassette)) // from a journal entry
	r.GET("/__mock/api/cassettes/:name", h.getCassette)
	r.POST("/__mock/api/cassettes/reload", h.reloadCassettes)
	r.GET("/__mock/api/events", h.events)
	h.router = r
	h.h = h.guard(r)
	return h
}

// Owns reports whether a request path belongs to the control API.
func Owns(path string) bool {
	return path == strings.TrimSuffix(Prefix, "/") || strings.HasPrefix(path, Prefix)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.h.ServeHTTP(w, r)
}

// apiError is the control API's error body, shaped like Dify's.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Code: code, Message: msg, Status: status})
}

func badRequest(w http.ResponseWriter, msg string) {
	writeErr(w, http.StatusBadRequest, "invalid_param", msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(apiError{Code: "internal_server_error", Message: err.Error(), Status: status})
	}
	writeRawJSON(w, status, body)
}

// writeRawJSON writes an encoded JSON body and its newline.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// decode reads a JSON body strictly (unknown fields are an error, so a
// typo does not silently do nothing).
func decode(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeErr(w, http.StatusRequestEntityTooLarge, "request_entity_too_large", "The body is over "+strconv.Itoa(maxBody)+" bytes.")
			return false
		}
		badRequest(w, "reading the body: "+err.Error())
		return false
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		if optional {
			return true
		}
		badRequest(w, "A JSON body is required.")
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		badRequest(w, "Invalid JSON body: "+err.Error())
		return false
	}
	if dec.More() {
		badRequest(w, "Invalid JSON body: more than one JSON value.")
		return false
	}
	return true
}

// target is the app a per-app route's ?app= names, or false after a 404
// naming the known apps.
func (h *Handler) target(w http.ResponseWriter, r *http.Request) (AppTarget, bool) {
	name := r.URL.Query().Get("app")
	if h.opt.App == nil {
		if name != "" {
			writeErr(w, http.StatusNotFound, "not_found", "No app "+strconv.Quote(name)+": this dify-mock serves one app.")
			return AppTarget{}, false
		}
		return AppTarget{Store: h.opt.Store, Backend: h.opt.Backend}, true
	}
	t, err := h.opt.App(name)
	if err != nil {
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
		return AppTarget{}, false
	}
	return t, true
}

func (h *Handler) consolePage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	serveAsset(w, r, "index.html")
}

func (h *Handler) consoleAsset(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	serveAsset(w, r, strings.TrimPrefix(ps.ByName("file"), "/"))
}

func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	data, ctype, ok := console.Asset(name)
	if !ok {
		writeErr(w, http.StatusNotFound, "not_found", "No such console file.")
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	// The console loads nothing from the network: only its own files.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	_, _ = w.Write(data)
}

func (h *Handler) info(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	info := map[string]any{}
	if h.opt.Backend != nil {
		for k, v := range h.opt.Backend.Info() {
			info[k] = v
		}
	}
	info["journal"] = !h.opt.NoJournal
	info["journal_size"] = h.opt.Journal.Size()
	info["journal_bytes"] = h.opt.Journal.Bytes()
	info["journal_held_bytes"] = h.opt.Journal.Held()
	info["journal_dropped"] = h.opt.Journal.Dropped()
	info["rules"] = h.opt.Rules.Len()
	info["admin_token_required"] = h.opt.AdminToken != ""
	if h.opt.Apps != nil {
		info["apps"] = h.opt.Apps()
	}
	writeJSON(w, http.StatusOK, info)
}

// --- journal

// needsJournal answers 409 journal_off for a route that reads the journal
// when the server keeps none.
func (h *Handler) needsJournal(next httprouter.Handle) httprouter.Handle {
	if !h.opt.NoJournal {
		return next
	}
	return func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
		writeErr(w, http.StatusConflict, "journal_off", "The request journal is off (serve --journal=false): requests are not recorded. Start dify-mock without --journal=false to read or save them.")
	}
}

func (h *Handler) listJournal(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	f := journal.Filter{App: q.Get("app"), Route: q.Get("route"), User: q.Get("user"), Conversation: q.Get("conversation_id"), Status: q.Get("status")}
	if f.Conversation == "" {
		f.Conversation = q.Get("conversation")
	}
	if f.Route != "" && !journal.ValidRoute(f.Route) {
		badRequest(w, "route: want a path such as /v1/chat-messages, optionally after a method (\"POST /v1/chat-messages\")")
		return
	}
	if f.Status != "" && !journal.ValidStatusFilter(f.Status) {
		badRequest(w, "status: want a status code (429) or a class (4xx)")
		return
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			badRequest(w, "since: want an RFC 3339 time such as 2026-01-02T15:04:05Z")
			return
		}
		f.Since = t
	}
	for name, dst := range map[string]*int{"limit": &f.Limit} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				badRequest(w, name+": want a positive integer")
				return
			}
			*dst = n
		}
	}
	if v := q.Get("after_id"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			badRequest(w, "after_id: want a non-negative integer")
			return
		}
		f.AfterID = n
	}
	entries := h.opt.Journal.List(f)
	if entries == nil {
		entries = []journal.Entry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": entries, "journal_size": h.opt.Journal.Size()})
}

func entryID(w http.ResponseWriter, ps httprouter.Params) (int64, bool) {
	id, err := strconv.ParseInt(ps.ByName("id"), 10, 64)
	if err != nil || id < 1 {
		badRequest(w, "id: want a journal entry id (a positive integer)")
		return 0, false
	}
	return id, true
}

func (h *Handler) getJournal(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
	id, ok := entryID(w, ps)
	if !ok {
		return
	}
	e, ok := h.opt.Journal.Get(id)
	if !ok {
		writeErr(w, http.StatusNotFound, "not_found", "No journal entry "+strconv.FormatInt(id, 10)+" (it may have been cleared or pushed out of the journal).")
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (h *Handler) clearJournal(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	h.opt.Journal.Clear()
	writeJSON(w, http.StatusOK, map[string]string{"result": "success"})
}

// --- rules

func (h *Handler) listRules(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	writeJSON(w, http.StatusOK, map[string]any{"data": h.opt.Rules.List()})
}

func (h *Handler) addRule(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var in struct {
		App          string   `json:"app"`
		User         string   `json:"user"`
		Conversation string   `json:"conversation_id"`
		Route        string   `json:"route"`
		Cassette     string   `json:"cassette"`
		Speed        *float64 `json:"speed"`
		Fault        string   `json:"fault"`
		Times        int      `json:"times"`
		Note         string   `json:"note"`
	}
	if !decode(w, r, &in, false) {
		return
	}
	rule := rules.Rule{App: in.App, User: in.User, Conversation: in.Conversation, Route: in.Route, Cassette: strings.TrimSuffix(strings.TrimSpace(in.Cassette), ".yaml"),
		Speed: in.Speed, Fault: strings.TrimSpace(in.Fault), Times: in.Times, Note: in.Note}
	if err := rules.Check(&rule); err != nil {
		badRequest(w, err.Error())
		return
	}
	backend := h.opt.Backend
	if rule.App != "" {
		if h.opt.App == nil {
			badRequest(w, "app "+strconv.Quote(rule.App)+": this dify-mock serves one app; leave app out")
			return
		}
		t, err := h.opt.App(rule.App)
		if err != nil {
			badRequest(w, err.Error())
			return
		}
		backend = t.Backend
	}
	if backend != nil {
		if err := backend.CheckRule(&rule); err != nil {
			badRequest(w, err.Error())
			return
		}
	}
	added, err := h.opt.Rules.Add(rule)
	if err != nil {
		if errors.Is(err, rules.ErrTooMany) {
			writeErr(w, http.StatusConflict, "too_many_rules", err.Error())
			return
		}
		badRequest(w, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, added)
}

func (h *Handler) deleteRule(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
	if !h.opt.Rules.Delete(ps.ByName("id")) {
		writeErr(w, http.StatusNotFound, "not_found", "No rule "+strconv.Quote(ps.ByName("id"))+" (it may have been used up or deleted).")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) clearRules(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	n := h.opt.Rules.Clear()
	writeJSON(w, http.StatusOK, map[string]any{"result": "success", "deleted": n})
}

// --- state

func (h *Handler) stateSummary(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	h.writeSummary(w, t.Store)
}

func (h *Handler) writeSummary(w http.ResponseWriter, st *store.Store) {
	users := st.Summary()
	var convs, msgs, files int
	for _, u := range users {
		convs += u.Conversations
		msgs += u.Messages
		files += u.Files
	}
	writeJSON(w, http.StatusOK, map[string]any{"end_users": users, "totals": map[string]int{
		"end_users": len(users), "conversations": convs, "messages": msgs, "files": files,
	}})
}

func (h *Handler) stateUser(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	user := ps.ByName("user")
	snap := t.Store.Export()
	var id string
	for _, u := range snap.EndUsers {
		if u.Session == user {
			id = u.ID
		}
	}
	if id == "" {
		writeErr(w, http.StatusNotFound, "not_found", "No end user "+strconv.Quote(user)+".")
		return
	}
	convs := []store.SnapConvers{}
	for _, c := range snap.Conversations {
		if c.OwnerID == id {
			convs = append(convs, c)
		}
	}
	files := []store.SnapFile{}
	for _, f := range snap.Files {
		if f.OwnerID == id {
			files = append(files, f)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": user, "id": id, "conversations": convs, "files": files})
}

func (h *Handler) exportState(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if r.URL.Query().Get("app") == AllApps && h.opt.ExportAll != nil {
		data, err := h.opt.ExportAll()
		if err != nil {
			writeErr(w, http.StatusInternalServerError, "internal_server_error", err.Error())
			return
		}
		if r.URL.Query().Get("download") != "" {
			w.Header().Set("Content-Disposition", `attachment; filename="dify-mock-state.json"`)
		}
		writeRawJSON(w, http.StatusOK, data)
		return
	}
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	if r.URL.Query().Get("download") != "" {
		name := "dify-mock-state.json"
		if t.Name != "" && r.URL.Query().Get("app") != "" {
			name = "dify-mock-state-" + t.Name + ".json" // app names are [a-z0-9_-]
		}
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	}
	writeJSON(w, http.StatusOK, t.Store.Export())
}

func (h *Handler) importState(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if r.URL.Query().Get("app") == AllApps && h.opt.ImportAll != nil {
		var raw json.RawMessage
		if !decode(w, r, &raw, false) {
			return
		}
		if err := h.opt.ImportAll(raw); err != nil {
			badRequest(w, "state not imported (nothing changed): "+err.Error())
			return
		}
		h.opt.Journal.Publish(EventState, map[string]string{"app": AllApps})
		writeJSON(w, http.StatusOK, map[string]string{"result": "success"})
		return
	}
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	var snap store.Snapshot
	if !decode(w, r, &snap, false) {
		return
	}
	if err := t.Store.Import(snap); err != nil {
		badRequest(w, "state not imported (nothing changed): "+err.Error())
		return
	}
	h.publishState(t)
	h.writeSummary(w, t.Store)
}

func (h *Handler) resetState(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	var in struct {
		User *string `json:"user"`
	}
	if !decode(w, r, &in, true) {
		return
	}
	if in.User != nil {
		if err := t.Store.ResetUser(*in.User); err != nil {
			writeErr(w, http.StatusNotFound, "not_found", "No end user "+strconv.Quote(*in.User)+"; nothing was reset.")
			return
		}
	} else {
		t.Store.Reset()
	}
	h.publishState(t)
	h.writeSummary(w, t.Store)
}

// publishState tells live-update clients that an app's state changed
// (its name in the event's data when there are several apps).
func (h *Handler) publishState(t AppTarget) {
	var data any
	if h.opt.App != nil {
		data = map[string]string{"app": t.Name}
	}
	h.opt.Journal.Publish(EventState, data)
}

// --- cassettes

func (h *Handler) listCassettes(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": t.Backend.Cassettes()})
}

func (h *Handler) getCassette(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	c, ok := t.Backend.Cassette(strings.TrimSuffix(ps.ByName("name"), ".yaml"))
	if !ok {
		writeErr(w, http.StatusNotFound, "not_found", "No cassette "+strconv.Quote(ps.ByName("name"))+" is loaded.")
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (h *Handler) reloadCassettes(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	var in struct{}
	if !decode(w, r, &in, true) {
		return
	}
	res := t.Backend.ReloadCassettes()
	status := http.StatusOK
	if !res.OK {
		status = http.StatusUnprocessableEntity
	}
	writeJSON(w, status, res)
}

func (h *Handler) saveCassette(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var in struct {
		EntryID     int64  `json:"entry_id"`
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if !decode(w, r, &in, false) {
		return
	}
	if in.EntryID < 1 || in.Name == "" {
		badRequest(w, "entry_id (a journal entry of a chat stream) and name are required")
		return
	}
	e, ok := h.opt.Journal.Get(in.EntryID)
	if !ok {
		writeErr(w, http.StatusNotFound, "not_found", "No journal entry "+strconv.FormatInt(in.EntryID, 10)+".")
		return
	}
	// The entry's app's folder, unless ?app= names another.
	if r.URL.Query().Get("app") == "" && e.App != "" && h.opt.App != nil {
		q := r.URL.Query()
		q.Set("app", e.App)
		r.URL.RawQuery = q.Encode()
	}
	t, ok := h.target(w, r)
	if !ok {
		return
	}
	saved, err := t.Backend.SaveCassette(e, strings.TrimSuffix(in.Name, ".yaml"), in.Description)
	switch {
	case err == nil:
		writeJSON(w, http.StatusCreated, saved)
	case errors.Is(err, ErrConflict):
		writeErr(w, http.StatusConflict, "conflict", err.Error())
	case errors.Is(err, ErrNotFound):
		writeErr(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, ErrInvalid):
		badRequest(w, err.Error())
	default:
		writeErr(w, http.StatusInternalServerError, "internal_server_error", err.Error())
	}
}
