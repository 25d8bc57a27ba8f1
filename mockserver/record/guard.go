package record

import (
	"net/http"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
)

// The recorder spends a real key, so only its owner may use it: a web page
// the owner visits must not (docs/security.md). Every request is checked
// before anything is sent upstream:
//   - Host must be a loopback name, an IP literal, or a name in
//     Config.AllowedHosts (netguard.Policy with IPLiterals). A page on
//     evil.example whose DNS answer is rebound to 127.0.0.1 still sends
//     Host: evil.example and is refused.
//   - Origin, when a browser sends one, must be an http(s) origin on a
//     loopback name or a Config.AllowedHosts name, or listed in
//     Config.CORSOrigins.
//   - CORS exists only for Config.CORSOrigins: preflights are answered
//     here (never relayed), grants name the origin, and the upstream's own
//     Access-Control-* headers are never passed on.

// corsHeaders are the headers a page on a --cors-origin may send and read.
var corsHeaders = []netguard.Header{
	{Name: "Authorization", Send: true},
	{Name: "Content-Type", Send: true},
	{Name: cassette.NameHeader, Send: true, Read: true},
	{Name: "Content-Disposition", Read: true},
	{Name: "Retry-After", Read: true},
	{Name: "WWW-Authenticate", Read: true},
}

// guard answers requests that must not reach the upstream; true means the
// request may proceed. Preflights are answered here in every case.
func (r *Recorder) guard(w http.ResponseWriter, req *http.Request) bool {
	origin := req.Header.Get("Origin")
	w.Header().Add("Vary", "Origin")
	if !r.access.AllowsHost(req.Host) {
		writeError(w, http.StatusForbidden, "forbidden_host",
			"dify-mock record answers only requests addressed to this machine (localhost, 127.0.0.1, [::1]) or to a name given with --allow-host.")
		return false
	}
	grant := r.cors.Grant(origin)
	if origin != "" && grant == "" && !r.access.AllowsOrigin(origin) {
		writeError(w, http.StatusForbidden, "forbidden_origin",
			"dify-mock record does not answer web pages of other sites: it holds a real API key. Start it with --cors-origin ORIGIN to allow one.")
		return false
	}
	if grant != "" {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", grant)
		h.Set("Access-Control-Expose-Headers", netguard.ExposeHeaders(corsHeaders))
	}
	if req.Method == http.MethodOptions {
		if w.Header().Get("Access-Control-Allow-Origin") == "" || req.Header.Get("Access-Control-Request-Method") == "" {
			writeError(w, http.StatusForbidden, "forbidden_origin", "dify-mock record answers CORS preflights only for origins given with --cors-origin.")
			return false
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", netguard.AllowHeaders(corsHeaders))
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
