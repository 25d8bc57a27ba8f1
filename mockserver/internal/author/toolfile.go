package author

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/difyops/terraform-provider-dify/mockserver/cassette"
)

// fileExtRE is what an extension may be: Dify's tool file URLs end in
// ".<extension>" matched by a string converter, and the mock's replay finds
// them by letters and digits.
var fileExtRE = regexp.MustCompile(`^[A-Za-z0-9]+$`)

// fileSpecExt is the extension a message_file's URL uses.
func fileSpecExt(f *FileSpec) string {
	if f.Extension != "" {
		return f.Extension
	}
	if e := strings.TrimPrefix(filepath.Ext(f.Path), "."); e != "" && fileExtRE.MatchString(e) {
		return strings.ToLower(e)
	}
	return defaultFileExt
}

// toolFileInteraction reads a message_file's local file (Path, relative to
// dir) and makes the GET /files/tools/… interaction that carries it in the
// cassette (docs/mock/cassette-format.md#tool-files).
func toolFileInteraction(dir string, tf toolFileOut) (cassette.Exchange, error) {
	p := tf.spec.Path
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	f, err := os.Open(p)
	if err != nil {
		return cassette.Exchange{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, cassette.MaxToolFileSize+1))
	if err != nil {
		return cassette.Exchange{}, fmt.Errorf("%s: %v", p, err)
	}
	if len(data) > cassette.MaxToolFileSize {
		return cassette.Exchange{}, fmt.Errorf("%s is over the %d-byte limit for a tool file in a cassette", p, cassette.MaxToolFileSize)
	}
	mt := tf.spec.MimeType
	if mt == "" {
		mt = cassette.Mimetype(mime.TypeByExtension("." + tf.ext))
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	h := http.Header{
		"Content-Type":   {mt},
		"Content-Length": {strconv.Itoa(len(data))},
	}
	if name := filepath.Base(tf.spec.Path); name != "" {
		h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": name}))
	}
	return cassette.Exchange{
		Method: http.MethodGet, URL: strings.TrimSuffix(BaseURL, "/v1") + tf.url,
		Status: http.StatusOK, ResponseHeader: h, Body: data,
	}, nil
}
