package unwrap

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

type outer struct{ http.ResponseWriter }

func (o outer) Unwrap() http.ResponseWriter { return o.ResponseWriter }

type inner struct{ http.ResponseWriter }

type opaque struct{ http.ResponseWriter } // no Unwrap: the chain ends here

func TestFindLooksThroughWrappersThatUnwrap(t *testing.T) {
	in := &inner{httptest.NewRecorder()}
	if got, ok := Find[*inner](outer{outer{in}}); !ok || got != in {
		t.Fatalf("Find through two wrappers = %v, %v", got, ok)
	}
	if got, ok := Find[*inner](in); !ok || got != in {
		t.Fatalf("Find of the writer itself = %v, %v", got, ok)
	}
	if _, ok := Find[*inner](outer{opaque{in}}); ok {
		t.Fatal("Find looked through a wrapper without Unwrap")
	}
	if _, ok := Find[*inner](outer{httptest.NewRecorder()}); ok {
		t.Fatal("Find found a writer the chain does not have")
	}
	if _, ok := Find[*inner](nil); ok {
		t.Fatal("Find(nil) found something")
	}
}
