package mockserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// maxJSONBody bounds JSON request bodies; larger bodies get 413 (API §1.4).
const maxJSONBody = 4 << 20

// jsonBody is a decoded JSON object whose fields are checked one by one, so
// each problem names its field.
type jsonBody map[string]json.RawMessage

// readJSON reads a JSON object body. Empty bodies are an error unless
// optional is set (DELETE accepts no body, API §8).
func readJSON(w http.ResponseWriter, r *http.Request, optional bool) (jsonBody, *apiError) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, errTooLarge
		}
		return nil, errInvalidJSON
	}
	if len(bytes.TrimSpace(data)) == 0 {
		if optional {
			return jsonBody{}, nil
		}
		return nil, errInvalidJSON
	}
	var body jsonBody
	if err := json.Unmarshal(data, &body); err != nil || body == nil {
		return nil, errInvalidJSON
	}
	return body, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// str returns a string field; present=false when absent or null.
func (b jsonBody) str(field string) (value string, present bool, e *apiError) {
	raw, ok := b[field]
	if !ok || isNull(raw) {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &value); err != nil {
		return "", true, invalidParam(field + ": Input should be a valid string")
	}
	return value, true, nil
}

// boolean returns a boolean field (def when absent or null).
func (b jsonBody) boolean(field string, def bool) (bool, *apiError) {
	raw, ok := b[field]
	if !ok || isNull(raw) {
		return def, nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return def, invalidParam(field + ": Input should be a valid boolean")
	}
	return v, nil
}

// user reads the end-user id from a JSON body (API §1.3).
func (b jsonBody) user(required bool) (string, *apiError) {
	u, present, e := b.str("user")
	if e != nil {
		return "", e
	}
	if required && (!present || u == "") {
		return "", errUserRequired
	}
	return u, nil
}

// validUUID accepts the canonical 8-4-4-4-12 hex form (any case), as
// Python's uuid.UUID does for the strings clients send.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// queryLimit parses a 1–100 page size (default 20), API §5 and §6.
func queryLimit(r *http.Request) (int, *apiError) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return 20, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, invalidParam("limit: Input should be a valid integer")
	}
	if n < 1 {
		return 0, invalidParam("limit: Input should be greater than or equal to 1")
	}
	if n > 100 {
		return 0, invalidParam("limit: Input should be less than or equal to 100")
	}
	return n, nil
}
