package record

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The recorder spends a real key, so only its owner may use it: a web page
// the owner visits must not (docs/security.md). Every request is checked
// before anything is sent upstream:
//   - Host must be a loopback name, an IP literal, or a name in
//     Config.AllowedHosts. A page on evil.example whose DNS answer is
//     rebound to 127.0.0.1 still sends Host: evil.example and is refused.
//   - Origin, when a browser sends one, must be a loopback origin or listed
//     in Config.CORSOrigins.
//   - CORS exists only for Config.CORSOrigins: preflights are answered
//     here (never relayed), grants name the origin, and the upstream's own
//     Access-Control-* headers are never passed on.

// isLoopbackName reports whether host (no port) names this machine.
func isLoopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// allowedHost: loopback names, IP literals (DNS rebinding needs a name) and
// configured names.
func (r *Recorder) allowedHost(hostport string) bool {
	host := strings.ToLower(hostOnly(hostport))
	if host == "" {
		return false
	}
	if isLoopbackName(host) || net.ParseIP(host) != nil {
		return true
	}
	for _, a := range r.allowedHosts {
		if strings.EqualFold(strings.TrimSpace(a), host) {
			return true
		}
	}
	return false
}

// corsOrigin returns origin when it is configured for CORS, else "".
func (r *Recorder) corsOrigin(origin string) string {
	for _, o := range r.corsOrigins {
		if o = strings.TrimSpace(o); o != "" && strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return origin
		}
	}
	return ""
}

// allowedOrigin: no Origin (not a browser, or a same-origin GET), a
// loopback origin (the owner's own dev server), or a configured one.
func (r *Recorder) allowedOrigin(origin string) bool {
	if origin == "" {
		return true
	}
	if r.corsOrigin(origin) != "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackName(hostOnly(u.Host))
}

// guard answers requests that must not reach the upstream; true means the
// request may proceed. Preflights are answered here in every case.
func (r *Recorder) guard(w http.ResponseWriter, req *http.Request) bool {
	origin := req.Header.Get("Origin")
	w.Header().Add("Vary", "Origin")
	if !r.allowedHost(req.Host) {
		writeError(w, http.StatusForbidden, "forbidden_host",
			"dify-mock record answers only requests addressed to this machine (localhost, 127.0.0.1, [::1]) or to a name given with --allow-host.")
		return false
	}
	if !r.allowedOrigin(origin) {
		writeError(w, http.StatusForbidden, "forbidden_origin",
			"dify-mock record does not answer web pages of other sites: it holds a real API key. Start it with --cors-origin ORIGIN to allow one.")
		return false
	}
	if grant := r.corsOrigin(origin); grant != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", grant)
		h.Set("Access-Control-Expose-Headers", CassetteHeader+", Content-Disposition, Retry-After, WWW-Authenticate")
	}
	if req.Method == http.MethodOptions {
		if w.Header().Get("Access-Control-Allow-Origin") == "" || req.Header.Get("Access-Control-Request-Method") == "" {
			writeError(w, http.StatusForbidden, "forbidden_origin", "dify-mock record answers CORS preflights only for origins given with --cors-origin.")
			return false
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, "+CassetteHeader)
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	return true
}

// isCORSHeader: the upstream's CORS policy is not the recorder's.
func isCORSHeader(canonical string) bool {
	return strings.HasPrefix(canonical, "Access-Control-")
}
