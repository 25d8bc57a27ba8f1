package detach

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

type wrapper struct{ http.ResponseWriter }

func (w wrapper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func TestOfFindsTheTailThroughWrappers(t *testing.T) {
	rec := httptest.NewRecorder()
	if Of(rec) != nil {
		t.Fatal("a writer without a Tail has one")
	}
	w := Wrap(rec)
	if got := Of(wrapper{wrapper{w}}); got != w.tail || got == nil {
		t.Fatalf("Of through two wrappers = %p, want %p", got, w.tail)
	}
	if Of(wrapper{rec}) != nil {
		t.Fatal("a wrapper of a plain writer has a Tail")
	}
}

func TestLaterRunsAtEndInOrderOnlyWhenDetached(t *testing.T) {
	var tail Tail
	if tail.Later(func() { t.Fatal("ran") }) {
		t.Fatal("Later took work before Detach: the caller would never do it")
	}
	var nilTail *Tail
	if nilTail.Later(func() {}) {
		t.Fatal("a nil Tail took work")
	}
	tail.Detach(func() {})
	var order []string
	if !tail.Later(func() { order = append(order, "journal") }) || !tail.Later(func() { order = append(order, "log") }) {
		t.Fatal("Later refused work after Detach")
	}
	if len(order) != 0 {
		t.Fatal("work ran before End")
	}
	tail.End()
	if want := []string{"journal", "log"}; !reflect.DeepEqual(order, want) {
		t.Fatalf("End ran %v, want %v", order, want)
	}
	// Work left after the end (a middleware that returns late) runs at once.
	if !tail.Later(func() { order = append(order, "late") }) || order[len(order)-1] != "late" {
		t.Fatalf("work after End did not run at once: %v", order)
	}
}

func TestContinueRunsTheRestAfterTheChain(t *testing.T) {
	w := Wrap(httptest.NewRecorder())
	w.Continue() // not detached: nothing to run
	ran := make(chan struct{})
	Of(w).Detach(func() { close(ran) })
	select {
	case <-ran:
		t.Fatal("the rest ran before Continue")
	default:
	}
	w.Continue()
	<-ran
	w.Continue() // once only
}
