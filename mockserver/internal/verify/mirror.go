package verify

import (
	"context"
	"fmt"
	"io"
	"net/http"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver"
	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
	"github.com/difyops/terraform-provider-dify/mockserver/internal/upstream"
)

// mirrorApp returns set (nil = the built-in cassettes) with the upstream's
// app description in place of its own: the GETs `dify-mock record` stores
// as app.yaml (/, /info, /parameters, /meta, /site). The in-process mock
// then describes the same app (name, form, feature switches), so a case
// gated on a feature runs on both sides or on neither, and what differs is
// behaviour rather than app data. Nothing of it is written anywhere.
func mirrorApp(ctx context.Context, set *cassette.Set, client *http.Client, up *upstream.Upstream) (*cassette.Set, error) {
	if set == nil {
		var err error
		if set, err = mockserver.BuiltinSet(); err != nil {
			return nil, err
		}
	}
	f := &cassette.File{Meta: cassette.Meta{Format: cassette.FormatVersion, Kind: cassette.KindApp, Provenance: cassette.ProvenanceRecorded}}
	for _, p := range cassette.AppPaths {
		req, err := up.NewRequest(ctx, http.MethodGet, p, "", nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", p, err)
		}
		if err := upstream.CheckAnswer(resp); err != nil {
			return nil, fmt.Errorf("GET %s: %w", p, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", p, err)
		}
		f.Interactions = append(f.Interactions, &vcr.Interaction{
			Request:  vcr.Request{Method: http.MethodGet, URL: up.Endpoint(p, "")},
			Response: vcr.Response{Code: resp.StatusCode, Headers: resp.Header, Body: string(body)},
		})
	}
	app, err := cassette.ParseApp(cassette.AppName, "the upstream's app description", f)
	if err != nil {
		return nil, err
	}
	mirrored := *set
	mirrored.App = app
	return &mirrored, nil
}
