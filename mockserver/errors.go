package mockserver

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
)

// apiError is Dify's error envelope (docs/api §1.4): {"code","message","status"},
// plus "params" for the old field-mapping form.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Params  string `json:"params,omitempty"`
	Status  int    `json:"status"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, message string) *apiError {
	return &apiError{Code: code, Message: message, Status: status}
}

// Werkzeug's default descriptions, which Dify passes through for plain HTTP
// exceptions (docs/api §1.4).
const (
	msgNotFound         = "The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again."
	msgMethodNotAllowed = "The method is not allowed for the requested URL."
	msgInternal         = "The server encountered an internal error and was unable to complete your request. Either the server is overloaded or there is an error in the application."
	msgTooLarge         = "The data value transmitted exceeds the capacity limit."
	// Flask's Request.on_json_loading_failed replaces a JSON decoding
	// failure with a bare BadRequest outside debug mode, so Dify answers
	// Werkzeug's default text (libs/external_api.py rewrites only the
	// debug-mode "Failed to decode JSON object" text, which production
	// servers never produce).
	msgBadRequest = "The browser (or proxy) sent a request that this server could not understand."
	// Werkzeug's UnsupportedMediaType from Request.get_json() when the
	// request's Content-Type is not JSON.
	msgNotJSON      = "Did not attempt to load JSON data because the request Content-Type was not 'application/json'."
	msgUserRequired = "Arg user must be provided."
)

// Auth failures (docs/api §1.2).
const (
	msgAuthMissing = "Authorization header must be provided and start with 'Bearer'"
	msgAuthScheme  = "Authorization scheme must be 'Bearer'"
	msgAuthInvalid = "Access token is invalid"
)

var (
	errNotFound         = newError(http.StatusNotFound, "not_found", msgNotFound)
	errMethodNotAllowed = newError(http.StatusMethodNotAllowed, "method_not_allowed", msgMethodNotAllowed)
	errInternal         = newError(http.StatusInternalServerError, "internal_server_error", msgInternal)
	errTooLarge         = newError(http.StatusRequestEntityTooLarge, "request_entity_too_large", msgTooLarge)
	// errStateFull is the mock's own refusal (Dify has no such bound): the
	// annotations alone would pass --max-state-bytes.
	errStateFull   = newError(http.StatusRequestEntityTooLarge, "request_entity_too_large", "dify-mock: the annotations would pass the state bound (--max-state-bytes); delete some or raise the bound.")
	errInvalidJSON = newError(http.StatusBadRequest, "bad_request", msgBadRequest)
	errNotJSON     = newError(http.StatusUnsupportedMediaType, "unsupported_media_type", msgNotJSON)
	// errUnhandled is libs/external_api.py handle_general_exception's body
	// for an exception Dify does not map (e.g. a JSON body that is not an
	// object reaching request.get_json().get("user")).
	errUnhandled       = newError(http.StatusInternalServerError, "unknown", "Internal Server Error")
	errUserRequired    = invalidParam(msgUserRequired)
	errConvNotFound    = newError(http.StatusNotFound, "not_found", "Conversation Not Exists.")
	errMessageNotFound = newError(http.StatusNotFound, "not_found", "Message Not Exists.")
	errShuttingDown    = newError(http.StatusServiceUnavailable, "service_unavailable", "dify-mock is shutting down.")
)

func invalidParam(message string) *apiError {
	return newError(http.StatusBadRequest, "invalid_param", message)
}

// pydanticError is a pydantic ValidationError as libs/external_api.py
// answers it: 400 invalid_param, message = str(ValidationError).
func pydanticError(model string, errs ...pydantic.Error) *apiError {
	return invalidParam(pydantic.Message(model, errs...))
}

func writeError(w http.ResponseWriter, e *apiError) {
	body, _ := json.Marshal(e)
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
	}
	writeJSONBody(w, e.Status, body)
}

// writeJSON writes v with status. Dify (Flask) ends JSON bodies with a newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, errInternal)
		return
	}
	writeJSONBody(w, status, body)
}

// writeJSONBody is writeJSON for a body already encoded (without the
// newline, which it adds).
func writeJSONBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// notFoundPage is Werkzeug's HTML NotFound page. The Service API does not
// set flask-restx's catch_all_404s, so a URL no route matches (unknown
// path, trailing slash, an id the <uuid:…> converter rejects) gets Flask's
// HTML page, not the JSON envelope.
const notFoundPage = "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>" + msgNotFound + "</p>\n"

func writeNotFoundPage(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(notFoundPage)))
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(notFoundPage))
}
