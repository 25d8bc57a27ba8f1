// Package conformance is the table of how the Dify Service API answers each
// class of input on every route an Agent app key can call, and a runner that
// plays that table against any base URL and app key.
//
// The table is the single source of truth for two consumers: the mock's own
// tests (which assert every case's Expect against an in-process dify-mock)
// and `dify-mock verify` (which runs the same cases against a live Dify and
// against the mock and reports where the observed answers differ). So the
// runner never assumes it talks to the mock: it creates what a case needs
// (a conversation, a message, an upload) through the public API under one
// dedicated end user, records only what clients can observe (status, error
// envelope, content type, JSON shape), and deletes what it created.
//
// Every case names the Dify source (file and function) its expectation
// encodes; docs/mock/api-coverage.md names the Dify version those files
// were read at (SourceVersion).
package conformance

import "time"

// SourceVersion is the Dify server generation the expectations were read
// from: the flask-restx + pydantic Service API controllers that
// `validate_app_token` guards, as released in langgenius/dify 1.17.x
// (Flask 3.1, flask-restx 1.3, pydantic 2.12). It matches the
// server_version the mock's GET /v1/ reports.
const SourceVersion = "1.17.1"

// Input classes: the kind of input a case varies (issue "systematic
// comparison": every route × each class).
const (
	ClassValid       = "valid"        // a well-formed request (the baseline)
	ClassMissing     = "missing"      // a required field left out
	ClassExtra       = "extra"        // unknown fields or parameters
	ClassWrongType   = "wrong-type"   // a field of the wrong JSON type
	ClassNull        = "null"         // a field sent as null
	ClassContentType = "content-type" // a missing or wrong Content-Type
	ClassUUID        = "uuid"         // UUID spellings: case, braces, urn, no hyphens, garbage
	ClassBounds      = "bounds"       // limits and sizes at and past their edges
	ClassEmpty       = "empty"        // empty strings, bodies and lists
	ClassMethod      = "method"       // a method the route does not serve
	ClassRouting     = "routing"      // unknown paths, trailing slashes, redirects
	ClassAuth        = "auth"         // the Authorization header
	ClassState       = "state"        // ownership and existence of what an id names
	ClassFeature     = "feature"      // an app feature switched off
	ClassStored      = "stored"       // the values Dify's code stores, whatever the model answered
)

// Fixture is something a case needs to exist before it runs. The runner
// creates each at most once per run through the public API, under its
// dedicated user, and removes what the API lets it remove afterwards.
type Fixture string

const (
	// FixtureConversation is a conversation of the run's user, started
	// with one chat turn ({conversation_id}); it is deleted at the end.
	FixtureConversation Fixture = "conversation"
	// FixtureMessage is the message of that turn ({message_id}).
	FixtureMessage Fixture = "message"
	// FixtureUpload is a small text file uploaded by the run's user
	// ({upload_file_id}); the Service API has no way to delete it.
	FixtureUpload Fixture = "upload"
	// FixtureEndUser is the run user's end-user id ({end_user_id}), taken
	// from the upload's created_by.
	FixtureEndUser Fixture = "end_user"
	// FixtureAnnotation is an annotation the run creates through
	// POST /apps/annotations ({annotation_id}); Cleanup deletes it. It
	// never switches annotation reply on, so no chat is answered by it.
	FixtureAnnotation Fixture = "annotation"
)

// ChatCost reports whether a fixture sends a chat turn (which costs model
// tokens on a real Dify).
func (f Fixture) ChatCost() bool { return f == FixtureConversation || f == FixtureMessage }

// Placeholders usable in Request.Path, Request.Body, header values and
// Expect.Message. The runner fills them in before sending and puts them
// back into observed messages, so expectations stay independent of the
// ids a run happens to get.
const (
	PhUser = "{user}" // the run's dedicated end-user string
	// PhUserNumber is a JSON number for cases that send `user` as a number
	// (Dify runs them as end user str(number)): drawn from the run's user,
	// so it is a new end user too, never a small id a real customer has.
	PhUserNumber     = "{user_number}"
	PhConversationID = "{conversation_id}" // FixtureConversation
	PhMessageID      = "{message_id}"      // FixtureMessage
	PhUploadFileID   = "{upload_file_id}"  // FixtureUpload
	PhEndUserID      = "{end_user_id}"     // FixtureEndUser
	PhAnnotationID   = "{annotation_id}"   // FixtureAnnotation
	PhUnknownUUID    = "{unknown_uuid}"    // a random UUID no server knows
	PhKey            = "{key}"             // the app key (headers only; never echoed into reports)
)

// Requirements restrict a case to apps whose mode or features allow it; the
// runner reads GET /info and GET /parameters once and skips the others.
type Requirements struct {
	Modes []string // app modes ("agent", "agent-chat"); empty = any
	// Feature switches from GET /parameters that must have this value,
	// keyed by the top-level name ("suggested_questions_after_answer",
	// "speech_to_text", "text_to_speech", ...).
	Features map[string]bool
}

// Part is one part of a multipart/form-data body.
type Part struct {
	Field       string
	Filename    string // "" = a plain form field
	NoFilename  bool   // a file-like part without a filename parameter
	ContentType string // "" = no Content-Type header on the part
	Data        string
	// Size, when larger than len(Data), pads Data with zero bytes to that size.
	Size int64
}

// Request is what a case sends. Path is appended to the target's base URL
// (which ends in "/v1" without a trailing slash), so "" is "/v1" itself.
type Request struct {
	Method string
	Path   string
	// Header values are sent as given ({key} and other placeholders are
	// filled in). The runner adds "Authorization: Bearer {key}" unless
	// NoAuth is set or Header names Authorization itself.
	Header map[string]string
	NoAuth bool
	// Body is the raw body. With Multipart set, the runner builds a
	// multipart body instead and sets its Content-Type (boundary included)
	// unless Header sets one.
	Body      string
	Multipart []Part
}

// Expect is what the Dify source says the answer is. Zero fields are not
// checked.
type Expect struct {
	Status int
	// ContentType is the media type without parameters
	// ("application/json", "text/html", "text/event-stream").
	ContentType string
	// Code and Message are the error envelope's fields (docs/api §1.4). Message
	// is compared after placeholders are put back and pydantic's
	// documentation URL is normalised (NormalizeMessage); "*" = any.
	Code    string
	Message string
	// Params is the envelope's optional "params" key.
	Params string
	// Fields are JSON paths (Shape notation) that must be present with this
	// kind; a kind of "" only requires presence. Absent lists paths that
	// must not be present.
	Fields map[string]string
	Absent []string
	// Values are JSON paths whose every value must be this compact JSON
	// (`"normal"`, `0`, `null`): what Dify's code stores there whatever the
	// model answered, e.g. parent_message_id = UUID_NIL. Only values that
	// do not depend on the run (ids, times, model text) belong here.
	Values map[string]string
	// Formats are JSON paths whose every value must be written in this
	// format class (FormatOf: FormatEpochSeconds, FormatISONaive,
	// FormatFloat, …): how Dify's framework writes a value whose content
	// depends on the run (a time, a latency).
	Formats map[string]string
	// Location is the redirect target's path (with query), for 3xx.
	Location string
	// BodyContains is a substring of the raw body (HTML pages).
	BodyContains string
	// Events is the SSE event sequence (names, pings left out) when the
	// answer is a stream; EventsEnd is what the sequence must end with
	// (for streams whose middle depends on the model).
	Events    []string
	EventsEnd []string
}

// Case is one row of the comparison.
type Case struct {
	Name  string // unique, stable; used as the test name and in reports
	Route string // "POST /chat-messages": method and route template
	Class string // one of the Class* constants
	// Source is the Dify file and function this expectation encodes, e.g.
	// "api/controllers/service_api/wraps.py validate_app_token".
	Source   string
	Request  Request
	Needs    []Fixture
	Requires Requirements
	// ChatTurn marks a case whose request may run a chat turn on a real
	// Dify (it costs model tokens). The runner caps these.
	ChatTurn bool
	Expect   Expect
	// Note explains a choice the source leaves open (e.g. two versions
	// differ and the case accepts what both accept).
	Note string
	// OtherUser, when set, says why the request acts as an end user other
	// than the run's own (a `user` Dify turns into another end-user row).
	// The mock's tests run such a case; `dify-mock verify` never sends it
	// to a real app, where every request acts as the run's end user.
	OtherUser string
}

// Timeout bounds one request (a chat turn included).
const Timeout = 60 * time.Second
