package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/internal/pydantic"
)

// maxJSONBody bounds JSON request bodies; larger bodies get 413 (docs/api §1.4).
const maxJSONBody = 4 << 20

// jsonBody is a decoded JSON object whose fields are checked one by one, so
// each problem names its field.
type jsonBody map[string]json.RawMessage

// readJSON reads a JSON object body the way Flask's request.get_json()
// does for Dify (api/controllers/service_api/wraps.py validate_app_token
// reads `user` through it on every JSON route): a Content-Type that is not
// JSON → 415 unsupported_media_type; an empty or malformed body → 400
// bad_request; a JSON value that is not an object → Dify's unhandled 500.
// Dify rejects an empty body on every route that reads JSON, DELETE
// included.
func readJSON(w http.ResponseWriter, r *http.Request) (jsonBody, *apiError) {
	body, _, e := readJSONRaw(w, r)
	return body, e
}

// readUserPayload is how Dify's JSON routes with a payload model start:
// validate_app_token reads the body and its `user` (required or not), then
// the route validates the body against its model (a 400 in pydantic's
// shape, every field's error at once).
func readUserPayload(w http.ResponseWriter, r *http.Request, userRequired bool, model pydantic.Model) (string, pydantic.Values, *apiError) {
	body, raw, e := readJSONRaw(w, r)
	if e != nil {
		return "", nil, e
	}
	user, e := body.user(userRequired)
	if e != nil {
		return "", nil, e
	}
	p, errs := model.Validate(pydantic.Body(raw))
	if len(errs) > 0 {
		return "", nil, pydanticError(model.Name, errs...)
	}
	return user, p, nil
}

// readJSONRaw is readJSON that also returns the body's bytes (for
// pydantic's input_value, which shows the body's keys in request order).
func readJSONRaw(w http.ResponseWriter, r *http.Request) (jsonBody, []byte, *apiError) {
	data, e := readJSONBytes(w, r)
	if e != nil {
		return nil, nil, e
	}
	var body jsonBody
	if err := json.Unmarshal(data, &body); err != nil || body == nil {
		return nil, nil, errUnhandled
	}
	return body, data, nil
}

// readJSONBytes is request.get_json() without the object requirement:
// 415 without a JSON Content-Type, 400 for an empty or malformed body.
func readJSONBytes(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		return nil, errNotJSON
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, errTooLarge
		}
		if errors.Is(err, errBodyTimeout) {
			return nil, errRequestTimeout
		}
		return nil, errInvalidJSON
	}
	if !json.Valid(data) {
		return nil, errInvalidJSON
	}
	return data, nil
}

// isJSONContentType is Werkzeug's Request.is_json: application/json or
// application/*+json, parameters ignored.
func isJSONContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// user reads the end-user id from a JSON body as
// api/controllers/service_api/wraps.py validate_app_token does:
// `request.get_json().get("user")`, a falsy value ("", 0, false, [], {},
// null) counts as missing, anything else becomes str(value).
func (b jsonBody) user(required bool) (string, *apiError) {
	v := pydantic.Decode(b["user"])
	if pydantic.Falsy(v) {
		if required {
			return "", errUserRequired
		}
		return "", nil
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	return pydantic.Repr(v), nil
}
