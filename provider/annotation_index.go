package provider

import (
	"context"
	"sync"

	"github.com/difyops/terraform-provider-dify/dify"
)

// annotationIndex lets every dify_annotation of one Terraform run refresh
// from one shared listing of GET /apps/annotations (docs/api §27.3): N
// annotations cost ceil(A/100) requests for A annotations of the app, not N
// listings. The API has no get-by-id.
//
// The listing is offset-paged newest first, so an annotation deleted by
// someone else while it is being read can shift a row past a page boundary
// and out of sight. Absence from the listing is therefore confirmed with one
// keyword search on the annotation's recorded question before a resource is
// dropped from state (Confirm); only genuinely missing annotations cost a
// request each.
type annotationIndex struct {
	client annotationAPI

	mu     sync.Mutex
	loaded bool
	byID   map[string]dify.Annotation
}

type annotationAPI interface {
	ListAnnotations(ctx context.Context, p dify.ListAnnotationsParams) (*dify.AnnotationPage, error)
}

// annotationPageSize is the most rows Dify serves per page whatever limit
// asks (released servers cap at 100, docs/api §27.3).
const annotationPageSize = 100

// maxAnnotationPages bounds one listing (1,000,000 annotations).
const maxAnnotationPages = 10000

func newAnnotationIndex(c annotationAPI) *annotationIndex {
	return &annotationIndex{client: c}
}

// listAnnotations reads every annotation matching keyword ("" = all),
// newest first, stopping after max rows (0 = no limit).
func listAnnotations(ctx context.Context, c annotationAPI, keyword string, max int) ([]dify.Annotation, error) {
	var out []dify.Annotation
	for p, err := range dify.AnnotationPages(ctx, c, dify.ListAnnotationsParams{Limit: annotationPageSize, Keyword: keyword}, maxAnnotationPages) {
		if err != nil {
			return nil, err
		}
		out = append(out, p.Data...)
		if max > 0 && len(out) >= max {
			return out[:max], nil
		}
	}
	return out, nil
}

// Lookup returns the annotation with id from the run's listing, or nil.
func (x *annotationIndex) Lookup(ctx context.Context, id string) (*dify.Annotation, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.loaded {
		all, err := listAnnotations(ctx, x.client, "", 0)
		if err != nil {
			return nil, err
		}
		x.byID = make(map[string]dify.Annotation, len(all))
		for _, a := range all {
			x.byID[a.ID] = a
		}
		x.loaded = true
	}
	if a, ok := x.byID[id]; ok {
		return &a, nil
	}
	return nil, nil
}

// Confirm looks for id among the annotations whose question or answer
// contains question: the cheap second look before an annotation is taken
// for deleted.
func (x *annotationIndex) Confirm(ctx context.Context, id, question string) (*dify.Annotation, error) {
	if question == "" {
		return nil, nil
	}
	found, err := listAnnotations(ctx, x.client, question, 0)
	if err != nil {
		return nil, err
	}
	for _, a := range found {
		if a.ID == id {
			x.Remember(a)
			return &a, nil
		}
	}
	return nil, nil
}

// Remember records an annotation this provider created or changed.
func (x *annotationIndex) Remember(a dify.Annotation) {
	x.mu.Lock()
	if x.byID != nil {
		x.byID[a.ID] = a
	}
	x.mu.Unlock()
}

// Forget drops a deleted annotation.
func (x *annotationIndex) Forget(id string) {
	x.mu.Lock()
	delete(x.byID, id)
	x.mu.Unlock()
}
