// Package unwrap finds a response writer of a given type in a chain of
// wrappers, the way http.ResponseController reaches the connection's
// writer: through each wrapper's Unwrap method.
package unwrap

import "net/http"

// Find returns the first writer of type T in w's chain (w itself, then what
// each Unwrap returns), and false when the chain has none.
func Find[T http.ResponseWriter](w http.ResponseWriter) (T, bool) {
	for w != nil {
		if t, ok := w.(T); ok {
			return t, true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		w = u.Unwrap()
	}
	var zero T
	return zero, false
}
