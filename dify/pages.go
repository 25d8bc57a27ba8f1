package dify

import (
	"iter"
)

// The listings page in four different ways, and each way is written once,
// next to its List call (ConversationPages, MessagePages in operations.go;
// AppFeedbackPages, AnnotationPages in appdata_operations.go): each page
// says whether it is the last (Last), each iterator moves its own cursor,
// and walk below is what they share. Iterators take the listing as an
// interface so that *Client and a test's stand-in serve alike.

// walk yields pages from fetch until a page is the last one, fetch fails
// (the error is yielded once), the loop body stops, or maxPages pages were
// yielded (0: no bound). advance moves the request to the next page before
// the page is yielded, so a caller that stops early can resume from the
// request.
func walk[P interface{ Last() bool }](maxPages int, fetch func() (P, error), advance func(P)) iter.Seq2[P, error] {
	return func(yield func(P, error) bool) {
		for n := 0; maxPages <= 0 || n < maxPages; n++ {
			page, err := fetch()
			if err != nil {
				var zero P
				yield(zero, err)
				return
			}
			last := page.Last()
			if !last {
				advance(page)
			}
			if !yield(page, nil) || last {
				return
			}
		}
	}
}

// defaultPageLimit is the limit the page-numbered listings use when none is
// sent (docs/api §26, §27.3).
const defaultPageLimit = 20

// numbered is walk for the page-numbered listings: from *page (0 or 1: the
// first) on, one page number after another. W is the page with what its Last
// needs; the caller sees f(W).
func numbered[W interface{ Last() bool }, P any](maxPages int, page *int, fetch func() (W, error), f func(W) P) iter.Seq2[P, error] {
	if *page < 1 {
		*page = 1
	}
	return unwrap(walk(maxPages, fetch, func(W) { *page++ }), f)
}

func limitOr(limit int) int {
	if limit > 0 {
		return limit
	}
	return defaultPageLimit
}

// unwrap maps the pages of seq through f.
func unwrap[W, P any](seq iter.Seq2[W, error], f func(W) P) iter.Seq2[P, error] {
	return func(yield func(P, error) bool) {
		for w, err := range seq {
			var p P
			if err == nil {
				p = f(w)
			}
			if !yield(p, err) {
				return
			}
		}
	}
}
