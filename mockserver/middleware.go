package mockserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"html"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/detach"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/secrets"
)

// recordingWriter remembers the status for the access log; Unwrap lets
// http.ResponseController reach the real writer's Flush.
type recordingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	// errBody is the start of an error response's body (status >= 400),
	// so the access log can say why a request was refused.
	errBody []byte
}

// maxLoggedErrorBody bounds what recordingWriter keeps of an error body.
const maxLoggedErrorBody = 1 << 10

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	if w.status >= 400 && len(w.errBody) < maxLoggedErrorBody {
		w.errBody = append(w.errBody, p[:min(n, maxLoggedErrorBody-len(w.errBody))]...)
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer (its
// FlushError reports a gone client).
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// recoverer is the panic guard of handlers outside front (the control
// API).
func (s *appServer) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &recordingWriter{ResponseWriter: w}
		defer s.recoverPanic(rw, r)
		next.ServeHTTP(rw, r)
	})
}

// recoverPanic, deferred, turns a panic into Dify's 500 envelope (docs/api
// §1.4). The log line carries the method, path and stack, never headers
// (which hold API keys).
func (s *appServer) recoverPanic(rw *recordingWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	if rw.status == 0 {
		writeError(rw, errInternal)
	}
}

// front is what routes() puts in front of the router: the panic guard, the
// access line, CORS headers on every /v1 response (errors included, so a
// browser can read 401 and 4xx bodies too), the request body's read
// deadline, then Werkzeug's routing habits before a route is matched:
// slash merging, and HEAD on every GET route. One layer, not four: each
// layer is a frame under every stream's deepest call (see
// TestStreamKeepsASmallStack) and a call on every request.
func (s *appServer) front(router http.Handler) http.Handler {
	routes, _ := router.(routeLookup)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw := &recordingWriter{ResponseWriter: w}
		defer s.recoverPanic(rw, r)
		if !s.log.Enabled(r.Context(), slog.LevelInfo) {
			s.route(rw, r, routes, router)
			return
		}
		start := time.Now()
		s.route(rw, r, routes, router)
		s.logRequest(rw, r, start)
	})
}

// route serves r after the CORS headers and the body deadline; not
// inlined, so that its locals stay off the frame of front, below every
// stream's deepest call.
//
//go:noinline
func (s *appServer) route(w http.ResponseWriter, r *http.Request, routes routeLookup, router http.Handler) {
	s.corsHeaders(w, r)
	s.armBodyDeadline(w, r)
	mergeSlashes(w, r, routes, router)
}

// accessLine is what the access log says about a request, read from the
// request and its writer when the handler returns (a detached stream's
// line is written later, and must not keep the writer).
type accessLine struct {
	method, path   string
	status         int
	cassette, turn string
	errBody        []byte
}

// logRequest writes the access line, or leaves it for the end of a stream
// that outlives the handler (mockserver/internal/detach). Its own frame (not
// inlined): the attributes and the record are a few hundred bytes that
// would otherwise sit in front's frame, below every stream's deepest
// call (stack.go).
//
//go:noinline
func (s *appServer) logRequest(w http.ResponseWriter, r *http.Request, start time.Time) {
	a := accessLine{method: r.Method, path: r.URL.Path}
	rw, _ := w.(*recordingWriter)
	if rw != nil {
		a.status = rw.status
		if rw.status >= 400 {
			a.errBody = rw.errBody
		}
	}
	// Which recording answered a chat message.
	if c := w.Header()[HeaderCassette]; len(c) > 0 && c[0] != "" {
		a.cassette = c[0]
		if t := w.Header()[HeaderTurn]; len(t) > 0 {
			a.turn = t[0]
		}
	}
	if t := detach.Of(w); t != nil && s.logLater(t, a, start) {
		return
	}
	s.writeAccessLine(&a, start)
}

// logLater leaves the line for the end of a detached stream; apart, so
// that the closure does not move every request's line to the heap.
func (s *appServer) logLater(t *detach.Tail, a accessLine, start time.Time) bool {
	return t.Later(func() { s.writeAccessLine(&a, start) })
}

// writeAccessLine writes a's line for a request that started at start;
// one clock reading dates the line and measures the request.
func (s *appServer) writeAccessLine(a *accessLine, start time.Time) {
	now := time.Now()
	took := now.Sub(start)
	// Attributes in a fixed-size array: the access log runs for every
	// request, and []any boxing was a third of its cost.
	var buf [8]slog.Attr
	attrs := append(buf[:0], slog.String("method", a.method), slog.String("path", a.path),
		slog.Int("status", a.status), slog.Duration("duration", took.Round(time.Microsecond)))
	if a.cassette != "" {
		attrs = append(attrs, slog.String("cassette", a.cassette), slog.String("turn", a.turn))
	}
	// Why a request was refused (Dify's error envelope).
	if a.status >= 400 {
		attrs = append(attrs, errorReason(a.errBody)...)
	}
	// A record without a caller (pc 0): the logger would otherwise walk the
	// stack for every request, and an access line's source is always this
	// one.
	line := slog.NewRecord(now, slog.LevelInfo, "request", 0)
	line.AddAttrs(attrs...)
	_ = s.log.Handler().Handle(context.Background(), line)
}

// errorReason turns an error body into log attributes: Dify's envelope's
// code and message (secrets redacted), or nothing for another body (the
// HTML 404 page, an empty 405).
func errorReason(body []byte) []slog.Attr {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &e) != nil || (e.Code == "" && e.Message == "") {
		return nil
	}
	return []slog.Attr{slog.String("code", e.Code), slog.String("message", secrets.RedactString(e.Message))}
}

// corsAllowMethods are the methods a preflight grants when the route's own
// are unknown.
const corsAllowMethods = "GET, POST, DELETE, OPTIONS"

// The header values every /v1 response shares (as copyRecordedHeader
// shares the recorded ones): net/http copies them when the headers go out,
// and a later Add appends to a full slice, so into a new array; nothing
// writes into them.
var (
	corsAnyOrigin   = []string{"*"}
	corsExposeValue = []string{corsExposeHeaders}
)

// corsOrigins reads Config.CORSOrigin: "" grants every origin, as "*" does.
func corsOrigins(v string) netguard.Origins {
	o := netguard.ParseOrigins(v)
	if o.Empty() {
		return netguard.ParseOrigins("*")
	}
	return o
}

// lookupRoute is routes.Lookup, except that HEAD finds the GET route when
// no HEAD route exists, as in Flask (Werkzeug adds HEAD to each rule with
// GET; net/http drops the body and keeps the status and headers).
func lookupRoute(routes routeLookup, method, path string) (httprouter.Handle, httprouter.Params) {
	h, ps, _ := routes.Lookup(method, path)
	if h == nil && method == http.MethodHead {
		h, ps, _ = routes.Lookup(http.MethodGet, path)
	}
	return h, ps
}

// corsHeaders adds Access-Control-* headers to a /v1 response, and to the
// signed /files/ routes, which Dify's files blueprint serves with CORS too
// (app factory: CORS(files_bp, …)), so a front end can fetch() a file.
func (s *appServer) corsHeaders(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1") && !strings.HasPrefix(r.URL.Path, "/files/") {
		return
	}
	h := w.Header()
	ao := s.origins.Grant(r.Header.Get("Origin"))
	switch ao { // canonical keys: assigned, not Set, on every /v1 request
	case "":
	case "*":
		h["Access-Control-Allow-Origin"] = corsAnyOrigin
		h["Access-Control-Expose-Headers"] = corsExposeValue
	default:
		h["Access-Control-Allow-Origin"] = []string{ao}
		h["Access-Control-Expose-Headers"] = corsExposeValue
	}
	if ao != "*" {
		// The answer depends on Origin whether it was allowed or
		// refused; a shared cache must not serve one for the other.
		h.Add("Vary", "Origin")
	}
}

// preflight answers OPTIONS for known routes; httprouter has already set the
// Allow header to the route's methods.
func (s *appServer) preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.Header.Get("Access-Control-Request-Method") != "" && h.Get("Access-Control-Allow-Origin") != "" {
		methods := h.Get("Allow")
		if methods == "" {
			methods = corsAllowMethods
		}
		h.Set("Access-Control-Allow-Methods", methods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", "600")
	}
	w.WriteHeader(http.StatusNoContent)
}

// authenticate enforces the app key before anything else a handler does
// (docs/api §1.2). Route matching (404/405) happens first, as in Flask.
func (s *appServer) authenticate(next httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if e := s.checkAuth(r.Header.Get("Authorization")); e != nil {
			writeError(w, e)
			return
		}
		next(w, r, ps)
	}
}

func (s *appServer) checkAuth(header string) *apiError {
	token, e := parseBearer(header)
	if e != nil {
		return e
	}
	if len(s.cfg.APIKeys) == 0 {
		if strings.HasPrefix(token, "app-") && len(token) > len("app-") {
			return nil
		}
		return newError(http.StatusUnauthorized, "unauthorized", msgAuthInvalid)
	}
	valid := 0
	for _, k := range s.cfg.APIKeys {
		valid |= subtle.ConstantTimeCompare([]byte(k), []byte(token))
	}
	if valid == 1 {
		return nil
	}
	return newError(http.StatusUnauthorized, "unauthorized", msgAuthInvalid)
}

// parseBearer reads the token of an Authorization header as Dify's
// validate_app_token does, or the 401 it answers for the header.
func parseBearer(header string) (string, *apiError) {
	scheme, token, ok := strings.Cut(header, " ")
	if header == "" || !ok {
		return "", newError(http.StatusUnauthorized, "unauthorized", msgAuthMissing)
	}
	if !strings.EqualFold(scheme, "bearer") {
		return "", newError(http.StatusUnauthorized, "unauthorized", msgAuthScheme)
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", newError(http.StatusUnauthorized, "unauthorized", msgAuthInvalid)
	}
	return token, nil
}

// bearerToken is the token of an Authorization header, if it has one.
func bearerToken(header string) (string, bool) {
	if header == "" {
		return "", false
	}
	token, e := parseBearer(header)
	return token, e == nil
}

// routeLookup is the part of *httprouter.Router that mergeSlashes needs.
type routeLookup interface {
	Lookup(method, path string) (httprouter.Handle, httprouter.Params, bool)
}

// mergeSlashes answers a path with repeated slashes the way Dify's Flask
// (Werkzeug, merge_slashes) does: when the merged path names a route for
// this method, 308 Permanent Redirect to it, query string kept, before auth.
// A base URL ending in "/" makes clients that append "/chat-messages" send
// "/v1//chat-messages" (dify-client 2.3.2, dify-ai-provider); against Dify
// they follow the redirect, so the mock must not answer 404.
func mergeSlashes(w http.ResponseWriter, r *http.Request, routes routeLookup, next http.Handler) {
	if !strings.Contains(r.URL.Path, "//") {
		if r.Method == http.MethodHead && routes != nil {
			if h, ps := lookupRoute(routes, r.Method, r.URL.Path); h != nil {
				h(w, r, ps)
				return
			}
		}
		next.ServeHTTP(w, r)
		return
	}
	if routes != nil {
		if h, _ := lookupRoute(routes, r.Method, collapseSlashes(r.URL.Path)); h == nil {
			next.ServeHTTP(w, r)
			return
		}
	}
	permanentRedirect(w, r, collapseSlashes(r.URL.EscapedPath()))
}

// notFound answers what no route matches. GET /v1 is Werkzeug's strict-
// slashes redirect to the index rule /v1/ (308, query kept); everything
// else is Werkzeug's HTML 404 page (see notFoundPage).
func notFound(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		permanentRedirect(w, r, "/v1/")
		return
	}
	writeNotFoundPage(w)
}

// permanentRedirect writes Werkzeug's 308 redirect to path on this host,
// query string kept, with its HTML body. Unlike Werkzeug, the Location is the
// path alone: the request's Host header is the client's to choose, and
// echoing it would let a forged Host (DNS rebinding, a poisoned cache) send
// other clients elsewhere.
func permanentRedirect(w http.ResponseWriter, r *http.Request, path string) {
	target := path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	h := w.Header()
	h.Set("Location", target)
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusPermanentRedirect)
	esc := html.EscapeString(target) // Werkzeug's redirect page
	_, _ = w.Write([]byte("<!doctype html>\n<html lang=en>\n<title>Redirecting...</title>\n<h1>Redirecting...</h1>\n" +
		"<p>You should be redirected automatically to the target URL: <a href=\"" + esc + "\">" + esc + "</a>. If not, click the link.\n"))
}

// collapseSlashes replaces every run of slashes with one.
func collapseSlashes(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
