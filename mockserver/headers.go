package mockserver

import (
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/fault"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/netguard"
)

// Request headers that steer the mock per request.
const (
	HeaderCassette = cassette.NameHeader // picks a cassette; set on chat responses
	HeaderSpeed    = "X-Dify-Mock-Speed"
	// HeaderTurn is set on chat responses: the replayed turn's index (from 0).
	HeaderTurn = "X-Dify-Mock-Turn"
	// HeaderMatch is set on chat responses: how the turn was chosen
	// (header, conversation, exact, similar, default, upstream or
	// fallback; docs/mock/hybrid.md).
	HeaderMatch = "X-Dify-Mock-Match"
	// HeaderScore is the similarity of the picked turn's query (similar).
	HeaderScore = "X-Dify-Mock-Score"
	// HeaderUpstream is hybrid mode's: "live" on a turn the upstream
	// answered, "fallback: REASON" on a recorded turn that answered instead.
	HeaderUpstream = "X-Dify-Mock-Upstream"
	// HeaderAnnotation is set on a chat response that an annotation
	// answered: the annotation's id (the mock's own header, like
	// HeaderCassette).
	HeaderAnnotation = "X-Dify-Mock-Annotation"
)

// mockHeaders is the one table of the X-Dify-Mock-* headers a client sends
// to /v1 or reads from it (docs/mock/frontend.md); the CORS lists below are
// built from it, so a page on another origin may send and read exactly
// these. (The control API's admin token header is not here: the control API
// is never shared with other origins.)
var mockHeaders = []netguard.Header{
	{Name: HeaderCassette, Send: true, Read: true},
	{Name: HeaderSpeed, Send: true},
	{Name: fault.Header, Send: true, Read: true},
	{Name: HeaderTurn, Read: true},
	{Name: HeaderAnnotation, Read: true},
	{Name: HeaderMatch, Read: true},
	{Name: HeaderScore, Read: true},
	{Name: HeaderUpstream, Read: true},
}

// corsHeaders are the headers a browser may send to /v1 and read from it:
// Dify's own (Authorization, Content-Type, the trace headers Dify's
// service API reads, and the standard answer headers) and mockHeaders.
var corsHeaders = append([]netguard.Header{
	{Name: "Authorization", Send: true},
	{Name: "Content-Type", Send: true},
	{Name: "X-Trace-Id", Send: true},
	{Name: "X-Trace-Session-Id", Send: true},
	{Name: "WWW-Authenticate", Read: true},
	{Name: "Content-Disposition", Read: true},
	{Name: "Retry-After", Read: true},
}, mockHeaders...)

var (
	corsAllowHeaders  = netguard.AllowHeaders(corsHeaders)
	corsExposeHeaders = netguard.ExposeHeaders(corsHeaders)
)
