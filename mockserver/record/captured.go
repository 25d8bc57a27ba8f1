package record

import (
	"errors"
	"fmt"

	vcr "github.com/dnaeon/go-vcr/v2/cassette"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// SaveCaptured writes captures as a new chat cassette dir/<name>.yaml (or
// <name>-2.yaml, … when the name is taken; an existing file is never
// replaced) and returns its path. The cassette is made by EncodeCaptured;
// dify-mock verify saves the live answers of the cases that differ with it.
func SaveCaptured(dir, name string, meta cassette.Meta, key string, rules []Rule, captures []cassette.Exchange) (string, error) {
	data, err := EncodeCaptured(name, meta, key, rules, captures)
	if err != nil {
		return "", err
	}
	for n := 1; n <= maxNameTries; n++ {
		path, err := cassette.WriteNew(dir, candidateName(name, n), data)
		if errors.Is(err, cassette.ErrExists) {
			continue
		}
		return path, err
	}
	return "", fmt.Errorf("no free name from %s.yaml to %s.yaml", name, candidateName(name, maxNameTries))
}

// EncodeCaptured is the one way to make a chat cassette from exchanges
// captured outside the recording proxy (dify-mock verify's live answers,
// the console's save-from-journal): every exchange passes through the
// recorder's scrubber (credential headers dropped, the key and the built-in
// secret patterns redacted, then rules), and the encoded file must pass the
// recorder's save-time gate (check: it decodes, loads as a chat cassette, so
// captures must include a POST /chat-messages, and no secret survives). It
// returns exactly the bytes to write; on refusal the error is a
// *SaveRefusedError.
func EncodeCaptured(name string, meta cassette.Meta, key string, rules []Rule, captures []cassette.Exchange) ([]byte, error) {
	if err := cassette.ValidName(name); err != nil {
		return nil, err
	}
	if name == cassette.AppName {
		return nil, fmt.Errorf("cassette name %q is reserved for the app description", name)
	}
	r := &Recorder{scrub: newScrubber(key, rules)}
	f := &cassette.File{Meta: meta, Interactions: make([]*vcr.Interaction, 0, len(captures))}
	for i, c := range captures {
		in, err := r.scrub.exchange(c)
		if err != nil {
			return nil, &SaveRefusedError{Cassette: name, Findings: []string{fmt.Sprintf("capture %d: %v", i, err)}}
		}
		f.Interactions = append(f.Interactions, in)
	}
	f.Meta.Description = r.scrub.string(f.Meta.Description)
	data, err := cassette.Encode(f)
	if err != nil {
		return nil, err
	}
	if err := r.check(name, data, cassette.KindChat); err != nil {
		return nil, err
	}
	return data, nil
}
