package control

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
)

// Where the admin token may come from. Browsers get the cookie by opening
// the console once with ?token=…; scripts send the header.
const (
	TokenHeader = "X-Dify-Mock-Admin-Token"
	tokenCookie = "dify_mock_admin"
	tokenQuery  = "token"
)

// arrivedOnLoopback reports whether the request's connection was accepted
// on a loopback address. A server listening beyond loopback (0.0.0.0, a LAN
// address) answers control requests from other machines only with a token.
func arrivedOnLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true // not from a net/http server (a handler called directly)
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// access is the control API's Host/Origin policy: loopback names and the
// configured names, no IP literals beyond loopback (a listener beyond
// loopback needs the admin token anyway; --admin-allow-host adds an
// address). This is what defeats DNS rebinding: a page on evil.example that
// resolves to 127.0.0.1 still sends Host: evil.example.
func (h *Handler) access() netguard.Policy { return netguard.Policy{Hosts: h.opt.AllowedHosts} }

// guard rejects requests that must not reach the control API: a Host or
// Origin that is not allowed, a missing or wrong admin token, a state
// changing request that a cross-site form could send, and CORS preflights
// (the control API is never shared with other origins).
func (h *Handler) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.opt.AdminToken == "" && !arrivedOnLoopback(r) {
			writeErr(w, http.StatusForbidden, "admin_token_required", "This request reached dify-mock on a non-loopback address: the control API then needs an admin token (dify-mock serve --admin-token).")
			return
		}
		if !h.access().AllowsHost(r.Host) {
			writeErr(w, http.StatusForbidden, "forbidden_host", "The control API answers only requests addressed to a loopback host (localhost, 127.0.0.1, [::1]); start dify-mock with --admin-allow-host to add names.")
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if !h.access().AllowsOrigin(o) {
				writeErr(w, http.StatusForbidden, "forbidden_origin", "The control API does not answer pages of other sites.")
				return
			}
		}
		if r.Method == http.MethodOptions {
			writeErr(w, http.StatusForbidden, "forbidden_origin", "The control API is not shared with other origins (no CORS).")
			return
		}
		if h.opt.AdminToken != "" {
			switch h.checkToken(w, r) {
			case tokenGood:
			case tokenRedirected:
				return
			default:
				w.Header().Set("WWW-Authenticate", `Bearer realm="dify-mock admin"`)
				writeErr(w, http.StatusUnauthorized, "unauthorized", "This dify-mock needs its admin token: send "+TokenHeader+" or Authorization: Bearer <token>, or open the console once with ?token=<token>.")
				return
			}
		}
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
			// A JSON content type cannot be sent by a plain HTML form, and
			// from script it needs a CORS preflight, which is refused above.
			if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
				writeErr(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Send the request body as JSON with Content-Type: application/json.")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type tokenResult int

const (
	tokenBad tokenResult = iota
	tokenGood
	tokenRedirected
)

// checkToken checks the admin token. A console URL with ?token= gets a cookie
// and a redirect to the same URL without the token, so the token does not
// stay in the address bar or the browser history.
func (h *Handler) checkToken(w http.ResponseWriter, r *http.Request) tokenResult {
	want := []byte(h.opt.AdminToken)
	eq := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	if eq(r.Header.Get(TokenHeader)) {
		return tokenGood
	}
	if scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "bearer") && eq(strings.TrimSpace(tok)) {
		return tokenGood
	}
	if c, err := r.Cookie(tokenCookie); err == nil && eq(c.Value) {
		return tokenGood
	}
	if r.Method == http.MethodGet && eq(r.URL.Query().Get(tokenQuery)) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: h.opt.AdminToken, Path: Prefix, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del(tokenQuery)
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return tokenRedirected
	}
	return tokenBad
}
